"""One more try for idempotent calls whose connection the server had closed.

pymongo already hides most stale connections: it polls the socket of a connection idle for
over a second before using it, clears the whole pool after a network error, and retries
reads (``find``, ``count_documents``, ``aggregate``) once. It does not retry commands
(``hello``, which gives the store its database clock) and, on a standalone server such as
FerretDB, never retries writes. So after a server that crashed and came back within a
second, the first ``hello`` or insert fails with ``AutoReconnect`` on a dead pooled
connection while the server is already back.

:func:`retry_once_if_lost` runs such a call once more. By then pymongo has cleared the pool,
so the second attempt runs on a fresh connection; a second loss means the server is going
away again and the caller hears of it. Only for calls that may safely run twice: reads, and
writes that recognise their own lost first attempt (enqueue, by its job ids).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from pymongo.errors import AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError

from ratchet.spi import get_logger, redact

__all__ = ["connection_lost", "idempotent", "retry_once_if_lost"]

log = get_logger("ratchet.stores.mongodb")

P = ParamSpec("P")
R = TypeVar("R")


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection that broke in use (worth one more try), rather than
    a server that could not be reached in time or answered too slowly (already waited for:
    a retry would only double the wait)."""
    return isinstance(exc, AutoReconnect) and not isinstance(
        exc, ServerSelectionTimeoutError | NetworkTimeout
    )


def retry_once_if_lost(call: Callable[[bool], R]) -> R:
    """``call(False)``, and ``call(True)`` once more if it lost its connection.

    The flag tells the call it is the retry, so a write can recognise rows of its own lost
    first attempt.
    """
    try:
        return call(False)
    except AutoReconnect as exc:
        if not connection_lost(exc):
            raise
        log.info("MongoDB connection lost, retrying once: %s", redact(str(exc)))
    return call(True)


def idempotent(method: Callable[P, R]) -> Callable[P, R]:
    """Decorate a method that may safely run twice: it is retried once after a lost
    connection (see :func:`retry_once_if_lost`)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return retry_once_if_lost(lambda _retry: method(*args, **kwargs))

    return wrapper

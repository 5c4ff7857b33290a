"""One retry after a lost connection, for calls that may safely run twice.

A pooled connection that breaks while a call uses it (server restart, terminated
backend, failover) raises :class:`ConnectionLostError`. Reads, and writes whose second run
has the same effect and answer, are then run once more on a fresh connection
(:func:`run_idempotent`): one retry is enough because the pool replaced its dead
connections, and a second loss means the server is going away again, which the caller
must hear of. Claims and fenced outcome writes are never retried this way: the server may
have applied them before the answer was lost, and only the engine can read back what
happened. Public SPI, as :class:`ratchet.spi.ConnectionLostError` and
:func:`ratchet.spi.run_idempotent`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from ratchet.errors import StoreUnavailableError

__all__ = ["ConnectionLostError", "run_idempotent"]

T = TypeVar("T")


class ConnectionLostError(StoreUnavailableError):
    """A connection broke while a call used it: the server closed it or went away."""


def run_idempotent(call: Callable[[bool], T], *, log: logging.Logger, store: str) -> T:
    """``call(False)``, and ``call(True)`` once more if it raised ConnectionLostError.

    The flag tells the call it is the retry, so a write can recognise its own lost first
    attempt (an enqueue does, by its job ids). ``store`` names the store in the log line.
    """
    try:
        return call(False)
    except ConnectionLostError as exc:
        log.info("store %s: connection lost, retrying once: %s", store, exc)
        return call(True)

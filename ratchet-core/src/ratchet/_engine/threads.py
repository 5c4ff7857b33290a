"""Background threads of a worker that cannot die unnoticed.

The poller, heartbeat, maintenance and recurring loops catch the store's failures around
each store call and back off. Anything else that escapes a loop is a bug or an unusable
setting, and a worker without that thread looks alive while it does nothing: a dead
poller meant a worker that said "started" and never claimed a job. So an escape is logged
at CRITICAL with its traceback and handed to ``on_crash``, which stops the worker; the
application learns of it from :class:`~ratchet.errors.WorkerCrashedError` (``run_worker``
raises it, ``ratchet worker`` exits non-zero).
"""

from __future__ import annotations

from collections.abc import Callable

from ratchet._limits import clip
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet.errors import WorkerCrashedError

__all__ = ["crash_error", "guarded"]

log = get_logger("ratchet.worker")


def describe(exc: BaseException) -> str:
    """``Type: message``, bounded and redacted; must not raise (``__str__`` may)."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = f"{type(exc).__name__} (its message could not be printed)"
    return redact(clip(text, 300))


def crash_error(node_id: str, thread_name: str, exc: BaseException) -> WorkerCrashedError:
    """The error a crashed worker reports: which thread died, of what, and what to do."""
    return WorkerCrashedError(
        f"Worker {node_id} stopped because its {thread_name!r} thread died of "
        f"{describe(exc)}. This is a bug or an unusable setting; the traceback is in the "
        "log. Fix the cause and start the worker again.",
        thread_name=thread_name,
        cause=exc,
    )


def guarded(
    name: str, target: Callable[[], None], on_crash: Callable[[str, BaseException], None]
) -> Callable[[], None]:
    """``target`` wrapped so that whatever escapes it (any ``BaseException``) is logged
    with its traceback and passed to ``on_crash(name, exc)``; the thread then ends."""

    def run() -> None:
        try:
            target()
        except BaseException as exc:
            log.critical(
                "Worker thread %r died of %s; the worker stops claiming and drains.",
                name,
                describe(exc),
                exc_info=exc,
            )
            on_crash(name, exc)

    return run

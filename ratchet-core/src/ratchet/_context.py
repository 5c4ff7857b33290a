"""``ratchet.current_job()``: what a running job knows about itself."""

from __future__ import annotations

import contextvars
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JobContext", "current_job"]


@dataclass(frozen=True, kw_only=True, slots=True)
class JobContext:
    """The running attempt: job id and name, 1-based attempt number, params, a logger,
    and whether Ratchet has asked it to stop (:attr:`cancel_requested`)."""

    id: str
    name: str
    attempt: int
    claim_seq: int
    params: dict[str, Any] = field(default_factory=dict)
    logger: logging.LoggerAdapter[logging.Logger] = field(repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def param(self, key: str, default: Any = None) -> Any:
        return self.params.get(key, default)

    @property
    def cancel_requested(self) -> bool:
        """True once Ratchet has asked this attempt to stop: its timeout has passed.

        Python cannot stop a running thread, so a timed-out synchronous job keeps its
        worker slot and its claim until it returns; a long job should check this flag
        between steps and return (or raise) soon after it turns true. Whatever the body
        returns then is discarded: the attempt is recorded as a timeout failure.
        """
        return self._cancel.is_set()

    def _request_cancel(self) -> None:
        self._cancel.set()


_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "ratchet_current_job", default=None
)


def current_job() -> JobContext:
    """The context of the job running in this thread or task.

    Raises RuntimeError outside a job.
    """
    context = _current.get()
    if context is None:
        raise RuntimeError(
            "ratchet.current_job() was called outside a running job; call it from inside "
            "a function that Ratchet is executing."
        )
    return context


def _set(context: JobContext | None) -> contextvars.Token[JobContext | None]:
    return _current.set(context)


def _reset(token: contextvars.Token[JobContext | None]) -> None:
    _current.reset(token)

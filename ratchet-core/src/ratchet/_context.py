"""``ratchet.current_job()``: what a running job knows about itself.

Besides its id, attempt and params, a running job has a logger and a way to report
progress. What it writes through :attr:`JobContext.logger` goes to the Python logger
``ratchet.job.<name>`` as any log record does and, when the store keeps job logs
(``RATCHET_JOB_LOGS_ENABLED`` and a store with ``SupportsJobLogs``), is also stored with
the job, by attempt (``app.job_logs(id)``, ``ratchet jobs logs ID``). The engine supplies
the stored half (a :class:`JobLog`, :mod:`ratchet._engine.job_logs`); this module only
hands lines and progress to it.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ratchet._job_logs import check_progress
from ratchet._logs import SafeRecordFilter
from ratchet._printable import printable
from ratchet._redact import redact
from ratchet._results import JobResult

__all__ = ["JobContext", "JobLog", "JobLogger", "current_job"]

_SAFE = SafeRecordFilter()


class JobLog(Protocol):
    """Where a running attempt's lines and progress are kept (the engine's sink)."""

    def capture(self, level: int, text: str) -> None:
        """Keep one line (already formatted and redacted). Must never raise nor block on
        the store."""

    def progress(self, done: float, total: float | None, note: str | None) -> bool:
        """Store (or schedule) a checked progress report; ``False`` when it was refused
        (a stale claim) or could not be stored."""

    def finish(self) -> None:
        """The attempt's body has returned: write what is left. Must never raise."""


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    """A job's logger: a :class:`logging.LoggerAdapter` on ``ratchet.job.<name>`` whose
    records also reach the job's stored log.

    A line is stored when its level is INFO or above, or when the Python logger is enabled
    for it (DEBUG lines are stored once the application logs DEBUG). The stored text is
    the record's message formatted and redacted exactly as Ratchet's log filter does for
    every handler (arguments' control characters escaped, secrets masked), followed by the
    traceback of ``exc_info`` when there is one.
    """

    def __init__(
        self,
        logger: logging.Logger,
        extra: dict[str, Any] | None = None,
        *,
        stored: JobLog | None = None,
    ) -> None:
        super().__init__(logger, extra)
        self._stored = stored

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if self._stored is not None and (level >= logging.INFO or self.isEnabledFor(level)):
            self._store(level, msg, args, kwargs.get("exc_info"))
        # One frame more (this one) between the caller and the logging module.
        kwargs["stacklevel"] = int(kwargs.get("stacklevel", 1)) + 1
        super().log(level, msg, *args, **kwargs)

    def _store(self, level: int, msg: object, args: tuple[Any, ...], exc_info: Any) -> None:
        stored = self._stored
        assert stored is not None
        try:
            # As logging.Logger._log reads exc_info: an exception, a tuple, or true.
            if isinstance(exc_info, BaseException):
                exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
            elif exc_info and not isinstance(exc_info, tuple):
                exc_info = sys.exc_info()
            if not exc_info or exc_info[0] is None:
                exc_info = None
            record = logging.LogRecord(self.logger.name, level, "", 0, msg, args or None, exc_info)
            _SAFE.filter(record)
            text = str(record.msg)
            if record.exc_text:
                text = f"{text}\n{record.exc_text}"
            stored.capture(level, text)
        except Exception:  # a line that cannot be kept must never fail the job
            return


@dataclass(frozen=True, kw_only=True, slots=True)
class JobContext:
    """The running attempt: job id and name, 1-based attempt number, params, a logger,
    whether Ratchet has asked it to stop (:attr:`cancel_requested`), and
    :meth:`progress` to report how far it got."""

    id: str
    name: str
    attempt: int
    claim_seq: int
    params: dict[str, Any] = field(default_factory=dict)
    logger: logging.LoggerAdapter[logging.Logger] = field(repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    _log: JobLog | None = field(default=None, repr=False, compare=False)
    # Reads how the step before this one ended (None outside a chain); read once, on use.
    _read_previous: Callable[[], JobResult | None] | None = field(
        default=None, repr=False, compare=False
    )
    _previous: list[JobResult | None] = field(default_factory=list, repr=False, compare=False)
    # Reads the payload of the signal delivered to this job (None when it awaited none).
    _read_signal: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    _signal: list[Any] = field(default_factory=list, repr=False, compare=False)

    def param(self, key: str, default: Any = None) -> Any:
        return self.params.get(key, default)

    @property
    def previous(self) -> JobResult | None:
        """How the step before this one in its chain ended (``app.builder(a).then(b)``:
        in ``b``, ``a``'s :class:`~ratchet.JobResult`, with its ``value``), or ``None``
        when the job is not a later step of a chain. Read from the store on first use,
        then kept for the attempt."""
        if not self._previous:
            read = self._read_previous
            self._previous.append(None if read is None else read())
        return self._previous[0]

    @property
    def signal(self) -> Any:
        """The payload of the signal delivered to this job (``builder.await_signal`` and
        ``app.deliver_signal(id_or_key, payload)``), as the JSON value it was delivered
        as, or ``None`` when the job awaited no signal. Read from the store on first use,
        then kept for the attempt."""
        if not self._signal:
            read = self._read_signal
            self._signal.append(None if read is None else read())
        return self._signal[0]

    @property
    def cancel_requested(self) -> bool:
        """True once Ratchet has asked this attempt to stop: its timeout has passed.

        Python cannot stop a running thread, so a timed-out synchronous job keeps its
        worker slot and its claim until it returns; a long job should check this flag
        between steps and return (or raise) soon after it turns true. Whatever the body
        returns then is discarded: the attempt is recorded as a timeout failure.
        """
        return self._cancel.is_set()

    def progress(self, done: float, total: float | None = None, note: str | None = None) -> bool:
        """Report how far this attempt has got: ``done`` out of ``total`` (``None``:
        unknown), with an optional short ``note``; read back with ``app.job_progress(id)``.

        Numbers must be finite and >= 0 and ``note`` at most 1,000 characters
        (:class:`~ratchet.errors.InvalidProgressError` otherwise); the note is redacted
        like a log line. Cheap to call often: at most one report per second is written
        while the job runs (the latest one; the last is always written when the attempt
        ends). Returns ``False`` when the report is not kept: this attempt's claim is no
        longer current (the job was recovered and claimed again: the write is fenced),
        the store could not be reached, or the store keeps no progress
        (``RATCHET_JOB_LOGS_ENABLED=false``, or a store without ``SupportsJobLogs``).
        """
        checked_done, checked_total, checked_note = check_progress(done, total, note)
        if self._log is None:
            return False
        if checked_note is not None:
            checked_note = redact(printable(checked_note))
        return self._log.progress(checked_done, checked_total, checked_note)

    def _request_cancel(self) -> None:
        self._cancel.set()

    def _finish(self) -> None:
        if self._log is not None:
            self._log.finish()


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
    """Leave the job's context: its body has returned, so what it logged is written now
    (``JobLog.finish``; off the event loop for an ``async`` job)."""
    context = _current.get()
    _current.reset(token)
    if context is not None:
        context._finish()

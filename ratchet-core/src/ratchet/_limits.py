"""Limits on what Ratchet accepts from callers, and on how much of a value it echoes back.

Every time a job carries (a delay, a scheduled time, a timeout, a back-off) and every
count is checked here, by the call that received it. A value past these limits used to be
stored and then break whatever read it: a time past year 9999 cannot be turned back into
a ``datetime``, so one such row made ``list_jobs()`` fail for the whole store, and a wait
longer than the platform allows kills the thread that waits. Rejecting the value where it
was written costs a comparison and leaves nothing in the store.

Messages quote a caller's value with :func:`echo`, which keeps it to
:data:`MAX_ECHO_CHARS`, so a huge argument cannot flood a log line or a terminal.
"""

from __future__ import annotations

import math
import reprlib
from datetime import UTC, datetime
from typing import Any

from ratchet._retry import MAX_BACKOFF_SECONDS
from ratchet.errors import ValueOutOfRangeError

__all__ = [
    "EARLIEST_TIME",
    "LATEST_TIME",
    "MAX_BACKOFF_MS",
    "MAX_DELAY_SECONDS",
    "MAX_ECHO_CHARS",
    "MAX_RETRIES",
    "MAX_TIMEOUT_SECONDS",
    "check_count",
    "check_delay",
    "check_moment",
    "check_timeout",
    "clip",
    "echo",
]

MAX_ECHO_CHARS = 200
MAX_DELAY_SECONDS = 10 * 365 * 86400.0
"""Ten years: the longest delay a job, a retry or a user RetryPolicy may ask for."""
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9999, 12, 30, tzinfo=UTC)
"""A day short of ``datetime.max``, so the time can be shown in any time zone."""
MAX_TIMEOUT_SECONDS = 30 * 86400.0
"""Thirty days: the longest job timeout (longer waits overflow some platforms' timers)."""
MAX_BACKOFF_MS = int(MAX_BACKOFF_SECONDS * 1000)
"""Back-off delays are capped at 24 hours, so a larger ``backoff_ms`` would mean nothing."""
MAX_RETRIES = 10_000


class _Echo(reprlib.Repr):
    """``reprlib`` that also survives integers too long for ``repr`` (over 4300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 1000:  # about 300 digits: describe it instead of printing it
            return f"<int of about {round(x.bit_length() * math.log10(2))} digits>"
        return super().repr_int(x, level)


_ECHO = _Echo()
_ECHO.maxstring = _ECHO.maxother = _ECHO.maxlong = MAX_ECHO_CHARS
_ECHO.maxlist = _ECHO.maxtuple = _ECHO.maxset = _ECHO.maxfrozenset = _ECHO.maxdict = 10
_ECHO.maxlevel = 4


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def echo(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters, for quoting a caller's value in
    a message. It must not raise: a failing ``repr`` is described instead."""
    try:
        text = _ECHO.repr(value)
    except Exception:
        text = f"<{type(value).__qualname__} object whose repr() failed>"
    return clip(text, limit)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_delay(seconds: Any, *, what: str = "Delay") -> float:
    """``seconds`` as a float when it is a finite number from 0 to :data:`MAX_DELAY_SECONDS`;
    otherwise raise ValueOutOfRangeError naming the value and the range."""
    valid = f"use a delay from 0 to {MAX_DELAY_SECONDS:.0f} s (10 years)"
    if not _is_number(seconds):
        raise ValueOutOfRangeError(f"{what} {echo(seconds)} is not a number of seconds; {valid}.")
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise ValueOutOfRangeError(f"{what} {echo(seconds)} s is not a finite number; {valid}.")
    if seconds < 0:
        raise ValueOutOfRangeError(f"{what} {echo(seconds)} s is negative; {valid}.")
    if seconds > MAX_DELAY_SECONDS:
        raise ValueOutOfRangeError(
            f"{what} {echo(seconds)} s is longer than 10 years; {valid}, or .at(datetime) for a "
            "fixed time."
        )
    return float(seconds)


def check_moment(moment: Any, *, what: str = "at()") -> datetime:
    """``moment`` when it is a timezone-aware datetime from :data:`EARLIEST_TIME` to
    :data:`LATEST_TIME`; naive datetimes are refused (their zone would be a guess)."""
    if not isinstance(moment, datetime) or moment.utcoffset() is None:
        raise ValueOutOfRangeError(
            f"{what} needs a timezone-aware datetime, got {echo(moment)}; for example "
            "datetime(2030, 1, 1, 9, 0, tzinfo=UTC)."
        )
    try:
        in_range = EARLIEST_TIME <= moment.astimezone(UTC) <= LATEST_TIME
    except (OverflowError, ValueError):  # the UTC equivalent is before year 1 or after 9999
        in_range = False
    if not in_range:
        raise ValueOutOfRangeError(
            f"{what} time {echo(moment)} is outside the range Ratchet stores, 1970-01-01 to "
            "9999-12-30 UTC; pick a time in that range (a time in the past runs at once)."
        )
    return moment


def check_timeout(timeout: Any) -> float | None:
    """``None`` (no timeout), or ``timeout`` as a float when it is a number of seconds
    above 0 and at most :data:`MAX_TIMEOUT_SECONDS`."""
    if timeout is None:
        return None
    if not _is_number(timeout) or not 0 < timeout <= MAX_TIMEOUT_SECONDS:  # NaN fails too
        raise ValueOutOfRangeError(
            f"Job timeout {echo(timeout)} must be a number of seconds above 0 and at most "
            f"{MAX_TIMEOUT_SECONDS:.0f} (30 days), or None for no timeout."
        )
    return float(timeout)


def check_count(value: Any, what: str, *, maximum: int) -> int:
    """``value`` when it is a whole number from 0 to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise ValueOutOfRangeError(
            f"{what} is {echo(value)}; it must be a whole number from 0 to {maximum}."
        )
    return value

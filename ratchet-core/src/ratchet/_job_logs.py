"""What a job reports about itself while it runs: its log lines and its progress.

The value types a store writes and reads (:class:`JobLogLine`, :class:`JobProgress`;
public SPI, re-exported from :mod:`ratchet.spi`) and what ``app.job_logs(id)`` returns
(:class:`JobLogs`: the stored lines grouped by attempt, with what was dropped).

Lines are numbered per attempt (``seq``, from 1, counting every line the job wrote, kept
or not), so a reader can tell how many were dropped without a counter of its own: the
store keeps the newest lines of an attempt, and everything up to the highest stored
number that is not there was dropped (pushed out by the bound, or lost with a write that
failed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from numbers import Real

from ratchet.errors import InvalidProgressError

__all__ = [
    "PROGRESS_NOTE_MAX_CHARS",
    "AttemptLog",
    "JobLogLine",
    "JobLogs",
    "JobProgress",
    "check_progress",
]

PROGRESS_NOTE_MAX_CHARS = 1000
"""The longest progress note accepted (characters)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JobLogLine:
    """One line a job wrote through ``current_job().logger``, as stored.

    ``claim_seq`` and ``attempt`` name the attempt (lines of a stale worker keep their own
    ``claim_seq``); ``seq`` is the line's 1-based number within that attempt; ``logged_at``
    is on the database clock (timezone-aware UTC); ``level`` is the logging level's name
    (``"INFO"``); ``message`` is the redacted text, traceback included.
    """

    job_id: str
    claim_seq: int
    attempt: int
    seq: int
    logged_at: datetime
    level: str
    message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class JobProgress:
    """The last progress a job reported (``current_job().progress(...)``).

    ``done`` and ``total`` are as given (``total`` may be ``None``: unknown);
    ``updated_at`` is the database time of the write; ``claim_seq`` and ``attempt`` name
    the attempt that reported it.
    """

    job_id: str
    claim_seq: int
    attempt: int
    done: float
    total: float | None
    note: str | None
    updated_at: datetime

    @property
    def fraction(self) -> float | None:
        """``done / total`` (at most 1.0), or ``None`` when the total is unknown or 0."""
        if not self.total:
            return None
        return min(self.done / self.total, 1.0)


@dataclass(frozen=True, kw_only=True, slots=True)
class AttemptLog:
    """The stored lines of one attempt, oldest first, and how many lines of it are missing
    (``dropped``: beyond the per-attempt bound, or lost with a failed write)."""

    claim_seq: int
    attempt: int
    lines: tuple[JobLogLine, ...]
    dropped: int


@dataclass(frozen=True, kw_only=True, slots=True)
class JobLogs:
    """Everything stored of one job's log lines, by attempt (oldest claim first)."""

    job_id: str
    attempts: tuple[AttemptLog, ...]

    @property
    def lines(self) -> tuple[JobLogLine, ...]:
        """Every stored line, attempt after attempt."""
        return tuple(line for attempt in self.attempts for line in attempt.lines)

    @property
    def dropped(self) -> int:
        """Lines missing over all attempts."""
        return sum(attempt.dropped for attempt in self.attempts)

    @classmethod
    def from_lines(cls, job_id: str, lines: list[JobLogLine]) -> JobLogs:
        """Group a store's lines (any order) by attempt: ``dropped`` is the highest line
        number of the attempt less the lines kept."""
        by_claim: dict[int, list[JobLogLine]] = {}
        for line in lines:
            by_claim.setdefault(line.claim_seq, []).append(line)
        attempts = []
        for claim_seq in sorted(by_claim):
            kept = sorted(by_claim[claim_seq], key=lambda line: line.seq)
            attempts.append(
                AttemptLog(
                    claim_seq=claim_seq,
                    attempt=kept[-1].attempt,
                    lines=tuple(kept),
                    dropped=max(kept[-1].seq - len(kept), 0),
                )
            )
        return cls(job_id=job_id, attempts=tuple(attempts))


def _amount(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidProgressError(
            f"Progress {what} is {value!r} ({type(value).__name__}); pass a number >= 0, "
            "for example progress(3, total=10)."
        )
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise InvalidProgressError(
            f"Progress {what} is {value!r}; it must be a finite number >= 0, for example "
            "progress(3, total=10)."
        )
    return number


def check_progress(
    done: object, total: object = None, note: object = None
) -> tuple[float, float | None, str | None]:
    """``(done, total, note)`` checked: numbers finite and >= 0 (booleans are not
    numbers), ``note`` a string of at most :data:`PROGRESS_NOTE_MAX_CHARS` characters.
    Raises :class:`~ratchet.errors.InvalidProgressError` naming the bad value."""
    checked_done = _amount("done", done)
    checked_total = None if total is None else _amount("total", total)
    if note is not None:
        if not isinstance(note, str):
            raise InvalidProgressError(
                f"Progress note is {note!r} ({type(note).__name__}); pass a string or None."
            )
        if len(note) > PROGRESS_NOTE_MAX_CHARS:
            raise InvalidProgressError(
                f"Progress note is {len(note)} characters long; at most "
                f"{PROGRESS_NOTE_MAX_CHARS} are stored. Shorten it (it is a status line, "
                "not a log: write details with current_job().logger)."
            )
    return checked_done, checked_total, note

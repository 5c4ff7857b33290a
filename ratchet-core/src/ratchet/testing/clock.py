"""The private store's clock in a testing block: it stands still until a test moves it.

A frozen clock is what makes a test about time deterministic: a job delayed by a second
is not due until the test says a second has passed, however slow the machine, and
every time the store writes in between is the same instant. The store reads it in place
of its own clock in every statement (``SQLiteJobStore.use_test_clock``), so delays,
retry backoff, cron fires, lock and lease expiry all follow it.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime, timedelta

from ratchet._clock import DatabaseClock

__all__ = ["EventClock", "TestClock"]


class TestClock:
    """Epoch seconds that change only through :meth:`advance` or :meth:`advance_to`.
    Thread-safe: the store reads it from job threads while a test advances it."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, start: float | None = None) -> None:
        """Start at ``start`` (epoch seconds; default: the real time now)."""
        self._now = time.time() if start is None else float(start)
        self._lock = threading.Lock()

    def read(self) -> float:
        """The current instant, in epoch seconds (what the store's ``now`` is)."""
        with self._lock:
            return self._now

    def now(self) -> datetime:
        """The current instant as an aware UTC datetime."""
        return datetime.fromtimestamp(self.read(), UTC)

    def advance(self, seconds: float | timedelta) -> datetime:
        """Move the clock forward by ``seconds`` (a number or a timedelta); returns the
        new instant. The clock never goes back: a negative or non-finite amount raises
        ValueError."""
        amount = seconds.total_seconds() if isinstance(seconds, timedelta) else float(seconds)
        if not math.isfinite(amount) or amount < 0:
            raise ValueError(
                f"advance() needs a finite number of seconds >= 0, got {seconds!r}: the "
                "testing clock only moves forward (open a new app.testing() block to "
                "start again)."
            )
        with self._lock:
            self._now += amount
            return datetime.fromtimestamp(self._now, UTC)

    def advance_to(self, moment: datetime) -> datetime:
        """Move the clock forward to ``moment`` (an aware datetime); a moment already
        past leaves it where it is. Returns the new instant."""
        if moment.tzinfo is None:
            raise ValueError(
                f"advance_to() needs an aware datetime, got the naive {moment!r}; add "
                "tzinfo=datetime.UTC."
            )
        with self._lock:
            self._now = max(self._now, moment.timestamp())
            return datetime.fromtimestamp(self._now, UTC)


class EventClock(DatabaseClock):
    """The observers' database clock inside a testing block: events are stamped with
    the test clock exactly, rather than with an estimate that drifts with real time."""

    def __init__(self, clock: TestClock) -> None:
        super().__init__(clock.now)
        self._clock = clock

    def now(self) -> datetime:
        return self._clock.now()

    def estimate(self) -> datetime:
        return self._clock.now()

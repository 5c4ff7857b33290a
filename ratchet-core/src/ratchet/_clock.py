"""An in-process estimate of the database clock, for event timestamps.

Events carry database-clock times (:mod:`ratchet.events`), but asking the database for
its time at every event would cost a round trip each. :class:`DatabaseClock` keeps the
offset between the database clock and this process's monotonic clock, refreshed whenever
a database time passes by (every claim returns one: ``claimed_at``), and read from the
store itself only when nothing has been observed yet. Monotonic time never jumps, so the
estimate drifts only as fast as the two clocks' rates differ (parts per million).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from ratchet._logs import get_logger
from ratchet._redact import redact

__all__ = ["DatabaseClock"]

log = get_logger("ratchet.events")

# After a failed read, wait this long before asking the store again.
RETRY_READ_SECONDS = 30.0


class DatabaseClock:
    """``now()`` on the database clock, estimated. Thread-safe."""

    def __init__(self, read: Callable[[], datetime]) -> None:
        """``read()`` asks the store for its time (``JobStore.database_time``)."""
        self._read = read
        # (database time, monotonic time it was seen at), replaced as one value.
        self._anchor: tuple[datetime, float] | None = None
        self._next_read_allowed = 0.0

    def observe(self, database_time: datetime, at_monotonic: float | None = None) -> None:
        """A database time seen at ``at_monotonic`` (default: now)."""
        seen = time.monotonic() if at_monotonic is None else at_monotonic
        self._anchor = (database_time, seen)

    def now(self) -> datetime | None:
        """The estimated database time now; ``None`` when the store cannot be read and
        nothing was observed yet (never raises)."""
        if self._anchor is None:
            self._read_once()
        return self.estimate()

    def estimate(self) -> datetime | None:
        """The estimate from what was observed, without reading the store (``None``
        when nothing was)."""
        anchor = self._anchor
        if anchor is None:
            return None
        base, seen = anchor
        return base + timedelta(seconds=time.monotonic() - seen)

    def _read_once(self) -> None:
        if time.monotonic() < self._next_read_allowed:
            return
        try:
            self.observe(self._read())
        except Exception as exc:
            self._next_read_allowed = time.monotonic() + RETRY_READ_SECONDS
            log.debug("Could not read the database time for events: %s", redact(str(exc)))

"""Adaptive poll interval: fast while work flows, backing off to a ceiling when idle."""

from __future__ import annotations

import threading

__all__ = ["AdaptivePolling"]


class AdaptivePolling:
    """Decides how long the poller sleeps after each poll.

    * A poll that claimed a full batch polls again at once (more work is likely waiting).
    * A poll that claimed something polls again after the burst interval.
    * After ``idle_polls_before_backoff`` empty polls in a row the interval doubles each
      empty poll, up to ``idle_max``.
    * A wakeup (local enqueue, coordinator hint, retry due) returns to the burst interval.
    """

    def __init__(self, *, burst: float, idle_max: float, idle_polls_before_backoff: int = 3):
        self.burst = burst
        self.idle_max = max(idle_max, burst)
        self.idle_polls_before_backoff = idle_polls_before_backoff
        self._lock = threading.Lock()
        self._delay = burst
        self._empty_polls = 0

    @property
    def delay(self) -> float:
        with self._lock:
            return self._delay

    def on_wakeup(self) -> None:
        with self._lock:
            self._delay = self.burst
            self._empty_polls = 0

    def after_poll(self, claimed: int, limit: int) -> float:
        with self._lock:
            if claimed >= limit > 0:
                self._empty_polls = 0
                self._delay = self.burst
                return 0.0
            if claimed > 0:
                self._empty_polls = 0
                self._delay = self.burst
            else:
                self._empty_polls += 1
                if self._empty_polls >= self.idle_polls_before_backoff:
                    self._delay = min(self._delay * 2, self.idle_max)
            return self._delay

    def after_error(self) -> float:
        """Back off after a store failure: double, at least one second, up to the ceiling."""
        with self._lock:
            self._delay = min(max(self._delay * 2, 1.0), max(self.idle_max, 1.0))
            return self._delay

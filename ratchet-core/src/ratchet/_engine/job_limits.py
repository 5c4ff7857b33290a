"""Per-job concurrency (``@app.job(concurrency=N)``): at most N attempts of one job at
once on one worker, on top of the worker's own slots.

The limit is checked when a claimed job is about to start, on the job's own thread. A
job over its limit is *deferred*: its claim is given back uncharged, due again after
the worker's poll interval, exactly as ``raise Snooze(seconds)`` would (no attempt used,
the execution record closed RELEASED with the reason, a ``JobSnoozed`` event), so any
worker with room for it, this one included, claims it again. Holding it on this worker
instead would keep a slot busy with waiting and, once the claim had recorded its start,
would charge it for a crash of this node while it never ran.

The limit is per worker process, not cluster-wide: it protects what one process holds
(a connection pool, memory, a local file). Cluster-wide limits are resource permits.
"""

from __future__ import annotations

import threading

__all__ = ["JobConcurrency", "deferral_message"]


def deferral_message(name: str, limit: int) -> str:
    """The execution record's text for a job deferred by its concurrency limit."""
    return (
        f"deferred: {limit} attempt(s) of job {name!r} already run on this worker "
        f"(concurrency={limit})"
    )


class JobConcurrency:
    """How many attempts of each job run on one worker now. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}

    def try_enter(self, name: str, limit: int) -> bool:
        """Count one more attempt of ``name`` unless ``limit`` already run; whether it
        may start. Each ``True`` must be matched by one :meth:`leave`."""
        with self._lock:
            running = self._running.get(name, 0)
            if running >= limit:
                return False
            self._running[name] = running + 1
            return True

    def leave(self, name: str) -> None:
        """An attempt counted by :meth:`try_enter` has ended."""
        with self._lock:
            left = self._running.get(name, 0) - 1
            if left > 0:
                self._running[name] = left
            else:
                self._running.pop(name, None)

    def running(self, name: str) -> int:
        with self._lock:
            return self._running.get(name, 0)

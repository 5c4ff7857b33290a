"""Claiming ahead of free slots, for short jobs only.

A claim costs nearly the same for one job as for fifty, so a worker whose jobs take a
millisecond spends most of its database time claiming a few jobs at a time. Claiming
ahead fixes that: the worker claims more than it has free slots and keeps the surplus in
a local ready queue, from which each freed slot takes its next job without a round trip.

The surplus is bounded by time, not by count: it is sized so that a claimed job waits
locally about ``prefetch_seconds`` at most, from the average time a slot takes per job
(run plus outcome write), measured as the worker goes. Slow jobs therefore get no
surplus at all, and other nodes are never starved of work one node has hoarded. Until
the first jobs finish nothing is known and nothing is claimed ahead.

What a claimed-ahead job costs: it is RUNNING (owned by this node, its execution record
open) while it waits, so its ``started_at`` includes the wait; an orderly drain releases
it with no charge; after a crash it is recovered with the node's other claims.
"""

from __future__ import annotations

import collections
import threading

from ratchet._types import ClaimedJob

__all__ = ["ReadyQueue"]

# Weight of the newest sample in the moving average of slot time per job.
_SMOOTHING = 0.05


class ReadyQueue:
    """Claimed jobs waiting for a slot, and how many more may be claimed ahead. Thread-safe."""

    def __init__(self, *, concurrency: int, prefetch_seconds: float, max_ahead: int) -> None:
        self.concurrency = concurrency
        self.prefetch_seconds = prefetch_seconds
        self.max_ahead = max_ahead
        self._lock = threading.Lock()
        self._jobs: collections.deque[ClaimedJob] = collections.deque()
        self._slot_seconds: float | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)

    def observe(self, slot_seconds: float) -> None:
        """Feed the time one job held its slot (start to outcome recorded)."""
        with self._lock:
            if self._slot_seconds is None:
                self._slot_seconds = slot_seconds
            else:
                self._slot_seconds += _SMOOTHING * (slot_seconds - self._slot_seconds)

    def ahead_allowance(self) -> int:
        """How many jobs may wait here: about ``prefetch_seconds`` of this worker's work."""
        with self._lock:
            per_job = self._slot_seconds
        if per_job is None or self.prefetch_seconds <= 0:
            return 0
        work = self.prefetch_seconds * self.concurrency / max(per_job, 1e-6)
        return min(self.max_ahead, int(work))

    def push(self, jobs: list[ClaimedJob]) -> None:
        with self._lock:
            self._jobs.extend(jobs)

    def push_front(self, job: ClaimedJob) -> None:
        """Put back a job taken by :meth:`pop` that could not start after all."""
        with self._lock:
            self._jobs.appendleft(job)

    def pop(self) -> ClaimedJob | None:
        with self._lock:
            return self._jobs.popleft() if self._jobs else None

    def ids(self) -> list[str]:
        """The ids of the waiting jobs."""
        with self._lock:
            return [job.id for job in self._jobs]

    def remove(self, job_id: str) -> bool:
        """Drop the waiting job ``job_id`` (canceled meanwhile); whether it waited here."""
        with self._lock:
            kept = [job for job in self._jobs if job.id != job_id]
            removed = len(kept) != len(self._jobs)
            self._jobs = collections.deque(kept)
            return removed

    def drain(self) -> list[ClaimedJob]:
        """Remove and return every waiting job (to release them)."""
        with self._lock:
            jobs = list(self._jobs)
            self._jobs.clear()
            return jobs

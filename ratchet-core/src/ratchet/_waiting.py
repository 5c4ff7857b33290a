"""Waiting for a job to finish: ``Ratchet.wait_for`` and ``wait_for_async``.

The store is the truth: a waiter reads the job until its status is terminal, backing off
from 10 ms to half a second between reads. Two things wake it sooner. A job that ends in
this process (a worker embedded in the waiting application) wakes its waiters through
this process's own events; :class:`CompletionWaiters` subscribes to them only while
someone waits, so an application nobody waits in pays nothing. A job that ends on another
node wakes them through the coordinator's completion hints
(:class:`~ratchet.spi.SupportsCompletionHints`) when it offers them: the waiter watches
the job (again every ``WATCH_SECONDS / 2`` while it waits) and the node that records its
end announces it. A store that is unavailable meanwhile is read again at the slowest pace
until the timeout: a waiter outlives an outage the way workers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ratchet._event_bus import EventBus, Subscription
from ratchet._redact import redact
from ratchet._types import TERMINAL_STATUSES, Job
from ratchet.errors import JobNotFoundError, StoreUnavailableError
from ratchet.events import JobCanceled, JobDeadLettered, JobEvent, JobSucceeded

__all__ = ["CompletionWaiters", "wait_for", "wait_for_async"]

FIRST_READ_PAUSE_SECONDS = 0.01
SLOWEST_READ_PAUSE_SECONDS = 0.5
WATCH_SECONDS = 600.0
"""How long other nodes keep one watch; a longer wait renews it halfway."""

Watch = Callable[[Sequence[str], float], None]
"""``SupportsCompletionHints.watch_jobs``, or nothing to watch with."""

_FINISHING_EVENTS: tuple[type[JobEvent], ...] = (JobSucceeded, JobDeadLettered, JobCanceled)


class CompletionWaiters:
    """Who in this process waits for which job; woken by this process's events of a job
    ending (succeeded, dead-lettered, canceled). Thread-safe."""

    def __init__(self, events: EventBus) -> None:
        self.events = events
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Callable[[], None]]] = {}
        self._subscriptions: list[Subscription] = []

    def watch(self, job_id: str, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (from the events' thread) when ``job_id`` ends here."""
        with self._lock:
            self._waiting.setdefault(job_id, []).append(wake)
            if not self._subscriptions:
                self._subscriptions = [
                    self.events.subscribe(kind, self._ended) for kind in _FINISHING_EVENTS
                ]

    def unwatch(self, job_id: str, wake: Callable[[], None]) -> None:
        with self._lock:
            wakes = self._waiting.get(job_id, [])
            if wake in wakes:
                wakes.remove(wake)
            if not wakes:
                self._waiting.pop(job_id, None)
            if not self._waiting:
                subscriptions, self._subscriptions = self._subscriptions, []
            else:
                subscriptions = []
        for subscription in subscriptions:
            subscription.unsubscribe()

    def wake(self, job_id: str) -> None:
        """Wake whoever waits here for ``job_id`` (it ended; they read it now)."""
        with self._lock:
            wakes = list(self._waiting.get(job_id, ()))
        for wake in wakes:
            wake()

    def _ended(self, event: JobEvent) -> None:
        self.wake(event.job_id)


class _Watcher:
    """Keeps other nodes watching one job while a waiter waits for it."""

    def __init__(self, watch: Watch | None, job_id: str) -> None:
        self._watch, self._job_id = watch, job_id
        self._renew_at = 0.0

    @property
    def due(self) -> bool:
        """Whether :meth:`renew` would send a watch now."""
        return self._watch is not None and time.monotonic() >= self._renew_at

    def renew(self) -> None:
        if self._watch is None or not self.due:
            return
        self._renew_at = time.monotonic() + WATCH_SECONDS / 2
        self._watch([self._job_id], WATCH_SECONDS)


def wait_for(
    read: Callable[[str], Job | None],
    waiters: CompletionWaiters,
    job_id: str,
    timeout: float | None,
    watch: Watch | None = None,
) -> Job:
    """Block until ``read(job_id)`` shows a terminal status; return that snapshot."""
    deadline = _deadline(timeout)
    woken = threading.Event()
    waiters.watch(job_id, woken.set)
    watcher = _Watcher(watch, job_id)
    try:
        pause = FIRST_READ_PAUSE_SECONDS
        while True:
            watcher.renew()  # before the read: an end after it is announced
            job, unavailable = _read(read, job_id)
            if job is not None and job.status in TERMINAL_STATUSES:
                return job
            left = _left(deadline, job_id, timeout, job, unavailable)
            woken.wait(pause if left is None else min(pause, left))
            woken.clear()
            pause = _next_pause(pause, unavailable)
    finally:
        waiters.unwatch(job_id, woken.set)


async def wait_for_async(
    read: Callable[[str], Job | None],
    waiters: CompletionWaiters,
    job_id: str,
    timeout: float | None,
    watch: Watch | None = None,
) -> Job:
    """:func:`wait_for` for asyncio: the reads run in a thread, the loop never blocks."""
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()

    def wake() -> None:  # called from the events' thread
        loop.call_soon_threadsafe(woken.set)

    deadline = _deadline(timeout)
    waiters.watch(job_id, wake)
    watcher = _Watcher(watch, job_id)
    try:
        pause = FIRST_READ_PAUSE_SECONDS
        while True:
            if watcher.due:  # a publish may block: off the loop, only when one is sent
                await asyncio.to_thread(watcher.renew)
            job, unavailable = await asyncio.to_thread(_read, read, job_id)
            if job is not None and job.status in TERMINAL_STATUSES:
                return job
            left = _left(deadline, job_id, timeout, job, unavailable)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), pause if left is None else min(pause, left))
            woken.clear()
            pause = _next_pause(pause, unavailable)
    finally:
        waiters.unwatch(job_id, wake)


def _read(
    read: Callable[[str], Job | None], job_id: str
) -> tuple[Job | None, StoreUnavailableError | None]:
    """The job, or the outage that kept it from being read. Raises JobNotFoundError."""
    try:
        job = read(job_id)
    except StoreUnavailableError as exc:
        return None, exc
    if job is None:
        raise JobNotFoundError(
            f"No job {job_id!r} in the store (never enqueued, or archived or deleted "
            "since); nothing to wait for. Check the id, e.g. with 'ratchet jobs show ID'."
        )
    return job, None


def _deadline(timeout: float | None) -> float | None:
    if timeout is not None and not timeout >= 0:
        raise ValueError(
            f"timeout={timeout!r}: give seconds >= 0, or None to wait as long as it takes."
        )
    return None if timeout is None else time.monotonic() + timeout


def _left(
    deadline: float | None,
    job_id: str,
    timeout: float | None,
    job: Job | None,
    unavailable: StoreUnavailableError | None,
) -> float | None:
    """Seconds left before ``deadline`` (``None``: no deadline); raises TimeoutError when
    none are, saying what the job was doing (or that the store could not be read)."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left > 0:
        return left
    state: Any = (
        f"is still {job.status.value}"
        if job is not None
        else f"could not be read (the store is unavailable: {redact(str(unavailable))})"
    )
    raise TimeoutError(
        f"Job {job_id!r} {state} after {timeout:g} s of waiting; it goes on without the "
        "waiter. Wait longer (timeout=...), or check it later with app.get_job(id)."
    ) from unavailable


def _next_pause(pause: float, unavailable: StoreUnavailableError | None) -> float:
    if unavailable is not None:
        return SLOWEST_READ_PAUSE_SECONDS
    return min(pause * 2, SLOWEST_READ_PAUSE_SECONDS)

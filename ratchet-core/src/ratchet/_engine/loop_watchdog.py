"""Noticing an ``async def`` job that blocks the event loop all async jobs share.

A coroutine that calls ``time.sleep``, blocking I/O or long CPU work without awaiting
holds the loop: no other async job makes progress, and its own timeout cannot cancel it
(cancellation needs the loop). Nothing can interrupt it from outside, but it can be seen:
:class:`LoopWatchdog` schedules a no-op on the loop from its own thread and, when the
loop has not run it within ``stall_seconds``, logs a warning naming the async jobs on
the loop (one of them is the culprit), then one line when the loop answers again.

What it costs: one thread per worker that runs async jobs, waking every
``stall_seconds`` to schedule one callback.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from ratchet._logs import engine_thread, get_logger
from ratchet._types import ClaimedJob

__all__ = ["LoopWatchdog"]

log = get_logger("ratchet.worker")

MAX_NAMED_JOBS = 10


class LoopWatchdog:
    """Warns when ``loop`` does not run a callback within ``stall_seconds``.

    ``running()`` returns the jobs currently on the loop; it is called from the watchdog
    thread and must be thread-safe.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        running: Callable[[], list[ClaimedJob]],
        stall_seconds: float,
    ) -> None:
        if not stall_seconds > 0:
            raise ValueError(f"stall_seconds {stall_seconds!r} must be a positive number.")
        self._loop = loop
        self._running = running
        self.stall_seconds = stall_seconds
        self._stop = threading.Event()
        self._thread = engine_thread(self._watch, "ratchet-async-watchdog")

    def start(self) -> LoopWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (returns at once; the thread exits within ``stall_seconds``)."""
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.stall_seconds):
            answered = threading.Event()
            pinged = time.monotonic()
            try:
                self._loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop was closed
                return
            if answered.wait(self.stall_seconds):
                continue
            jobs = self._running()
            if not jobs:  # nothing of ours on the loop: it is being stopped
                continue
            log.warning(
                "The event loop of async jobs has not answered for %.3g s: a job is "
                "blocking it (time.sleep, blocking I/O or long CPU work without await), "
                "which stalls every async job on this worker and keeps timeouts from "
                "cancelling them. Async jobs on the loop: %s. Await instead of blocking "
                "(asyncio.sleep; asyncio.to_thread for blocking calls).",
                time.monotonic() - pinged,
                _names(jobs),
            )
            while not answered.wait(self.stall_seconds):
                if self._stop.is_set():
                    return
            log.info(
                "The event loop of async jobs answers again after %.3g s.",
                time.monotonic() - pinged,
            )


def _names(jobs: list[ClaimedJob]) -> str:
    named = ", ".join(f"{job.id} ({job.name})" for job in jobs[:MAX_NAMED_JOBS])
    more = len(jobs) - MAX_NAMED_JOBS
    return named + (f" and {more} more" if more > 0 else "")

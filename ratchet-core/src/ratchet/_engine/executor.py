"""Bounded execution: sync jobs on a thread pool, ``async def`` jobs on one event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ratchet._engine.runner import JobRunner
from ratchet._types import ClaimedJob

__all__ = ["JobExecutor"]

log = logging.getLogger("ratchet.worker")


class _DaemonThreadPool:
    """A fixed pool of daemon threads.

    Unlike ``ThreadPoolExecutor``, whose threads the interpreter joins at exit, a job
    still running after a drain timeout cannot keep the process alive: its claim was
    already released, so letting the process exit is the interruption.
    """

    def __init__(self, size: int, prefix: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{prefix}-{n}", daemon=True)
            for n in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put((future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Let idle threads exit; busy ones exit after their current job."""
        for _ in self._threads:
            self._queue.put(None)


class JobExecutor:
    """Runs at most ``concurrency`` jobs at once and tracks which claims are in flight."""

    def __init__(
        self,
        runner: JobRunner,
        concurrency: int,
        on_done: Callable[[Any], None] | None = None,
        on_slot_time: Callable[[float], None] | None = None,
    ) -> None:
        """``on_done(outcome)`` runs after each job's slot is free (``None`` when
        recording failed); ``on_slot_time(seconds)`` gets how long each slot was held."""
        self.runner = runner
        self.concurrency = concurrency
        self._on_done = on_done
        self._on_slot_time = on_slot_time
        self._pool = _DaemonThreadPool(concurrency, "ratchet-job")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._changed = threading.Condition()
        self._in_flight: dict[
            tuple[str, int], tuple[ClaimedJob, concurrent.futures.Future[Any] | None]
        ] = {}
        self.completed = 0

    def free_slots(self) -> int:
        with self._changed:
            return self.concurrency - len(self._in_flight)

    def in_flight(self) -> list[ClaimedJob]:
        with self._changed:
            return [job for job, _ in self._in_flight.values()]

    def submit(self, job: ClaimedJob) -> None:
        """Start ``job`` (even past the concurrency: it then waits for a pool thread)."""
        key = (job.id, job.claim_seq)
        with self._changed:
            # Reserve the slot before starting, so a job that finishes at once is not
            # counted after it has already been removed.
            self._in_flight[key] = (job, None)
        self._start(job, key)

    def try_submit(self, job: ClaimedJob) -> bool:
        """Start ``job`` if a slot is free (checked and reserved atomically); else ``False``.

        The job may finish, and ``on_done`` run, inside this call, in the calling thread:
        callers must not hold a lock that ``on_done`` takes."""
        key = (job.id, job.claim_seq)
        with self._changed:
            if len(self._in_flight) >= self.concurrency:
                return False
            self._in_flight[key] = (job, None)
        self._start(job, key)
        return True

    def _start(self, job: ClaimedJob, key: tuple[str, int]) -> None:
        started = time.monotonic()
        future: concurrent.futures.Future[Any]
        if self.runner.is_async(job):
            coroutine = self.runner.run_async(job)
            future = asyncio.run_coroutine_threadsafe(coroutine, self._event_loop())
        else:
            future = self._pool.submit(self.runner.run_sync, job)
        with self._changed:
            if key in self._in_flight:
                self._in_flight[key] = (job, future)
        future.add_done_callback(lambda f: self._finished(key, f, started))

    def _finished(
        self, key: tuple[str, int], future: concurrent.futures.Future[Any], started: float
    ) -> None:
        if self._on_slot_time is not None:
            self._on_slot_time(time.monotonic() - started)
        outcome = None
        if not future.cancelled() and future.exception() is not None:
            # The runner records every job failure itself; this is a bug or a store outage
            # while recording. The claim stays RUNNING and orphan recovery takes it back.
            log.error("Recording the outcome of job %s failed: %s", key[0], future.exception())
        elif not future.cancelled():
            outcome = future.result()
        with self._changed:
            self._in_flight.pop(key, None)
            self.completed += 1
            self._changed.notify_all()
        if self._on_done is not None:
            self._on_done(outcome)

    def wait_until_idle(self, timeout: float | None) -> bool:
        """Block until nothing runs, or ``timeout`` seconds pass; True when idle."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._in_flight, timeout)

    def wait_for_change(self, timeout: float) -> None:
        """Block until a job finishes or ``timeout`` passes."""
        with self._changed:
            self._changed.wait(timeout)

    def cancel_running(self) -> None:
        """Interrupt what can be interrupted: async jobs are cancelled; threads cannot be."""
        with self._changed:
            futures = [future for _, future in self._in_flight.values() if future is not None]
        for future in futures:
            future.cancel()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._changed:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="ratchet-async-jobs", daemon=True
                )
                thread.start()
                self._loop, self._loop_thread = loop, thread
            return self._loop

    def shutdown(self) -> None:
        """Stop accepting work; threads still running a job finish in the background."""
        self._pool.shutdown()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

"""Bounded execution: sync jobs on a thread pool, ``async def`` jobs on one event loop.

A slot is held until the job's outcome is recorded, including while a timed-out sync
body still runs (:mod:`ratchet._engine.timeouts`); a watchdog reports an async job that
blocks the loop (:mod:`ratchet._engine.loop_watchdog`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ratchet._engine.failure_text import summarize_failure
from ratchet._engine.loop_watchdog import LoopWatchdog
from ratchet._engine.runner import JobRunner
from ratchet._logs import engine_thread, get_logger
from ratchet._redact import redact
from ratchet._types import ClaimedJob

__all__ = ["JobExecutor"]

log = get_logger("ratchet.worker")

# How long the async jobs' event loop may not answer before the watchdog warns.
LOOP_STALL_SECONDS = 1.0


class _DaemonThreadPool:
    """A fixed pool of daemon threads.

    Unlike ``ThreadPoolExecutor``, whose threads the interpreter joins at exit, a job
    still running after a drain timeout cannot keep the process alive: its claim was
    already released, so letting the process exit is the interruption.
    """

    def __init__(self, size: int, prefix: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [engine_thread(self._work, f"{prefix}-{n}") for n in range(size)]
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
        self._watchdog: LoopWatchdog | None = None
        self.loop_stall_seconds = LOOP_STALL_SECONDS
        # A Condition on an RLock: stop_waiting() may run in a signal handler on a thread
        # that is inside wait_until_idle().
        self._changed = threading.Condition()
        self._in_flight: dict[
            tuple[str, int], tuple[ClaimedJob, concurrent.futures.Future[Any] | None]
        ] = {}
        self._on_loop: set[tuple[str, int]] = set()
        # Slots promised to jobs a claim in progress starts (see reserve()).
        self._reserved = 0
        self._stop_waiting = False
        self.completed = 0

    def free_slots(self) -> int:
        """Slots neither running a job nor reserved for one."""
        with self._changed:
            return self._free()

    def _free(self) -> int:
        return self.concurrency - len(self._in_flight) - self._reserved

    def reserve(self, *, leave: int) -> int:
        """Hold every free slot beyond ``leave`` (those kept for jobs already waiting) for
        the jobs a claim will start at once; returns how many were held. Nothing else can
        take a held slot: each is filled with :meth:`submit_reserved` or given back with
        :meth:`unreserve`.

        This is what makes a recorded start true. A claim records the start of the jobs
        it expects to run at once (crash recovery charges those); without the hold, a
        claimed-ahead job started by a finishing job thread could take the slot while the
        claim is in flight, leaving a job with a recorded start waiting behind it, to be
        charged for the crash of whatever runs in its place."""
        with self._changed:
            held = max(0, self._free() - max(0, leave))
            self._reserved += held
            return held

    def unreserve(self, count: int) -> None:
        """Give back ``count`` held slots that no job will fill."""
        with self._changed:
            self._reserved -= min(count, self._reserved)

    def submit_reserved(self, job: ClaimedJob) -> None:
        """Start ``job`` in a slot held by :meth:`reserve`."""
        key = (job.id, job.claim_seq)
        with self._changed:
            if self._reserved <= 0:
                raise RuntimeError(f"no slot is held for job {job.id}: call reserve() first")
            self._reserved -= 1
            self._in_flight[key] = (job, None)
        self._start(job, key)

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
            if self._free() <= 0:
                return False
            self._in_flight[key] = (job, None)
        self._start(job, key)
        return True

    def _start(self, job: ClaimedJob, key: tuple[str, int]) -> None:
        started = time.monotonic()
        future: concurrent.futures.Future[Any]
        try:
            target = self.runner.resolve(job)  # once per run: it decides pool or loop
            if target.is_async:
                loop = self._event_loop()
                with self._changed:
                    self._on_loop.add(key)
                future = asyncio.run_coroutine_threadsafe(self.runner.run_async(job, target), loop)
            else:
                future = self._pool.submit(self.runner.run_sync, job, target)
        except BaseException as exc:  # defensive: a job that cannot start is its failure
            log.error(
                "Could not start job %s (%s): %s",
                job.id,
                job.name,
                redact(summarize_failure(exc, limit=500)),
                exc_info=exc,
            )
            with self._changed:
                self._on_loop.discard(key)
            future = self._pool.submit(self.runner.record_failure, job, exc)
        with self._changed:
            if key in self._in_flight:
                self._in_flight[key] = (job, future)
        future.add_done_callback(lambda f: self._finished(key, f, started))

    def _finished(
        self, key: tuple[str, int], future: concurrent.futures.Future[Any], started: float
    ) -> None:
        """Free the slot whatever happened; a callback that raises is logged, not lost."""
        outcome = None
        try:
            if self._on_slot_time is not None:
                self._on_slot_time(time.monotonic() - started)
            error = None if future.cancelled() else future.exception()
            if error is not None:
                # The runner records every outcome itself and never raises: this is a bug.
                # The claim stays RUNNING until a drain releases it or recovery takes it.
                log.error(
                    "Running job %s failed outside the job: %s",
                    key[0],
                    redact(summarize_failure(error, limit=500)),
                    exc_info=error,
                )
            elif not future.cancelled():
                outcome = future.result()
        finally:
            with self._changed:
                self._in_flight.pop(key, None)
                self._on_loop.discard(key)
                self.completed += 1
                self._changed.notify_all()
        if self._on_done is not None:
            try:
                self._on_done(outcome)
            except Exception:
                log.exception("Handling the end of job %s failed.", key[0])

    def wait_until_idle(self, timeout: float | None) -> bool:
        """Block until nothing runs, or ``timeout`` seconds pass, or :meth:`stop_waiting`
        is called; True when idle."""
        with self._changed:
            self._changed.wait_for(lambda: not self._in_flight or self._stop_waiting, timeout)
            return not self._in_flight

    def stop_waiting(self) -> None:
        """Make :meth:`wait_until_idle` return now, and at once from then on (a drain cut
        short). Safe to call from a signal handler."""
        with self._changed:
            self._stop_waiting = True
            self._changed.notify_all()

    def on_loop(self) -> list[ClaimedJob]:
        """The async jobs currently on the event loop."""
        with self._changed:
            return [self._in_flight[key][0] for key in self._on_loop if key in self._in_flight]

    def wait_for_change(self, timeout: float) -> None:
        """Block until a job finishes or ``timeout`` passes."""
        with self._changed:
            self._changed.wait(timeout)

    def cancel_job(self, job_id: str) -> None:
        """Cancel the ``async def`` attempts of ``job_id`` on the event loop (at their next
        ``await``); a thread cannot be stopped (see :mod:`ratchet._engine.cancels`)."""
        with self._changed:
            futures = [
                future
                for key, (_, future) in self._in_flight.items()
                if key[0] == job_id and key in self._on_loop and future is not None
            ]
        for future in futures:
            future.cancel()

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
                thread = engine_thread(loop.run_forever, "ratchet-async-jobs")
                thread.start()
                self._loop, self._loop_thread = loop, thread
                self._watchdog = LoopWatchdog(loop, self.on_loop, self.loop_stall_seconds)
                self._watchdog.start()
            return self._loop

    def shutdown(self) -> None:
        """Stop accepting work; threads still running a job finish in the background."""
        self._pool.shutdown()
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

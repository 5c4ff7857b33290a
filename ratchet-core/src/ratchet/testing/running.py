"""``Testing.run``: the due jobs of a testing block, run by the real engine, one at a time.

Nothing here re-implements a worker: a :class:`~ratchet._engine.worker.Worker` without its
timer threads claims each job (the claim, the execution record, the start), its
:class:`~ratchet._engine.runner.JobRunner` decodes the JSON arguments, calls the body
inside the job's context and execution middleware, and decides the outcome, which the
:class:`~ratchet._engine.outcomes.OutcomeRecorder` writes, fenced, before events and the
job's callbacks fire. The recurring scheduler fires the cron instants the clock has
reached. What differs from production, and why:

* **One job at a time** (concurrency 1, no claim-ahead), in claim order (priority, then
  when due), so a test sees the same order at every run.
* **Backoff skipped.** A retry is written with a delay of zero: it is due at once and
  runs in the same ``run()``, its attempt counted (``attempts``, ``current_job().attempt``).
  The RetryPolicy and ``max_retries`` still decide whether there is a retry at all.
* **Errors raised.** With ``raise_errors`` the run stops at the first attempt that raises,
  once its outcome (retry or dead letter) is recorded, and re-raises that very exception
  in the test's thread; the jobs not run yet stay PENDING.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from ratchet._engine.node import NodeContext
from ratchet._engine.outcomes import Fail, Retry
from ratchet._engine.recurring import RecurringScheduler
from ratchet._engine.worker import Worker
from ratchet._types import ClaimedJob, JobStatus
from ratchet.spi import JobStore
from ratchet.testing.clock import TestClock

__all__ = ["RunSummary", "run_due_jobs"]

# Enough for any test's pending jobs: the look-up for the next scheduled one reads them.
_PENDING_SCAN_LIMIT = 1_000_000
_ONE_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSummary:
    """What one :meth:`Testing.run` did: attempts ``ran`` (claims), and how many of them
    ``succeeded``, were ``retried`` or ``dead_lettered``."""

    ran: int
    succeeded: int
    retried: int
    dead_lettered: int


class _FirstFailure:
    """The exception of the first attempt that raised (kept from a job thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    def keep(self, exc: BaseException) -> None:
        with self._lock:
            if self.error is None:
                self.error = exc


def run_due_jobs(
    context: NodeContext,
    clock: TestClock,
    *,
    include_scheduled: bool,
    raise_errors: bool,
    timeout: float | None,
) -> RunSummary:
    """Run what is due on ``context``'s store (see the module), and what those jobs make
    due, until nothing is; with ``include_scheduled``, move ``clock`` to each job scheduled
    later and run it too. Raises the first job failure when ``raise_errors``, and
    TimeoutError once ``timeout`` real seconds have passed (jobs that keep enqueuing
    jobs that are due, or a body that never returns)."""
    options = dataclasses.replace(context.options, prefetch_seconds=0.0, completion_batch_size=1)
    context = dataclasses.replace(context, options=options)
    worker = Worker(context, concurrency=1)
    failure = _FirstFailure()
    _skip_backoff(worker, failure)
    scheduler = RecurringScheduler(
        context, max_sleep=options.recurring_poll_max_seconds, lifecycle=worker.lifecycle
    )
    deadline = None if timeout is None else time.monotonic() + timeout
    worker.start(poll=False)
    try:
        scheduler.sync_definitions()
        while failure.error is None or not raise_errors:
            scheduler.tick()
            if worker.claim_once():
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                if not worker.executor.wait_until_idle(left):
                    worker.stop(timeout=0)
                    raise TimeoutError(_timed_out(timeout))
                worker.flush_outcomes()
            elif include_scheduled and (due := _next_scheduled(context.store, clock)):
                # Stored times are read back rounded to the microsecond: one more makes
                # sure the job is due, however its float was rounded.
                clock.advance_to(due + _ONE_MICROSECOND)
            else:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(_timed_out(timeout))
    finally:
        try:
            scheduler.release()
        finally:
            worker.stop()
    worker.raise_if_crashed()
    if raise_errors and failure.error is not None:
        raise failure.error
    stats = worker.stats
    return RunSummary(
        ran=stats.claimed,
        succeeded=stats.succeeded,
        retried=stats.retried,
        dead_lettered=stats.failed,
    )


def _skip_backoff(worker: Worker, failure: _FirstFailure) -> None:
    """Make the worker's runner write every retry with no delay, and keep the first
    failure's exception; the decision is otherwise the runner's own."""
    runner = worker.runner
    decide = runner.failure_decision

    def failure_decision(job: ClaimedJob, exc: BaseException) -> Retry | Fail:
        decision = decide(job, exc)
        failure.keep(exc)
        if isinstance(decision, Retry):
            return dataclasses.replace(decision, delay_seconds=0.0)
        return decision

    # An instance attribute, for this worker only: the engine stays as production runs it.
    runner.failure_decision = failure_decision  # type: ignore[method-assign]


def _next_scheduled(store: JobStore, clock: TestClock) -> datetime | None:
    """When the earliest PENDING job scheduled after now is due, or ``None`` when there
    is none (a PENDING job already due that no claim took is not waited for)."""
    now = clock.now()
    pending = store.list_jobs(status=JobStatus.PENDING, limit=_PENDING_SCAN_LIMIT)
    return min((job.scheduled_at for job in pending if job.scheduled_at > now), default=None)


def _timed_out(timeout: float | None) -> str:
    return (
        f"Testing.run() did not finish within {timeout:g} s: a job is still running, or "
        "jobs keep making more jobs due (a job that enqueues itself). Pass a larger "
        "timeout=, or timeout=None to wait as long as it takes."
    )

"""``Ratchet.run_until_idle``: one worker without its timers, driven until nothing is due.

For tests and scripts: it claims and runs what is due, waits for what runs, and (unless
told not to) for the retries of its own jobs that come due within the timeout.
"""

from __future__ import annotations

import time

from ratchet._engine.node import NodeContext
from ratchet._engine.outcomes import Outcome
from ratchet._engine.worker import Worker
from ratchet._types import JobStatus
from ratchet.spi import JobStore

__all__ = ["run_until_idle"]


def run_until_idle(
    context: NodeContext,
    *,
    timeout: float | None,
    concurrency: int | None,
    wait_for_retries: bool = True,
) -> int:
    """Run every due job, including retries that come due meanwhile, then return.

    With ``wait_for_retries`` it also waits for the retries (and snoozes, see
    :class:`ratchet.Snooze`) of the jobs it ran whose backoff puts them within
    ``timeout`` (every such retry when ``timeout`` is None), so it returns once no job is
    due and none of its jobs has such a retry pending; a retry due later than that stays
    PENDING. Without, it returns as soon as nothing is due.

    Returns how many jobs were claimed. Raises TimeoutError after ``timeout`` seconds;
    jobs still running then are released back to PENDING.
    """
    worker = Worker(context, concurrency=concurrency)
    retried: set[str] = set()  # ids of the jobs it ran whose retry may be pending

    def note_retry(outcome: Outcome) -> None:
        # A snooze comes due again like a retry (only it used no attempt).
        if outcome.kind in ("retried", "snoozed"):
            retried.add(outcome.job_id)  # set.add is atomic: job threads call this

    if wait_for_retries:
        worker.on_outcome = note_retry
    worker.start(poll=False)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            finished_before = worker.executor.completed
            claimed = worker.claim_once()
            if not claimed and not worker.executor.in_flight() and not len(worker.ready):
                worker.flush_outcomes()
                if worker.executor.completed != finished_before:
                    continue  # something finished meanwhile and may have scheduled a retry
                if worker.claim_once():
                    continue  # the successes just flushed released chain steps
                pause = _until_next_retry(context.store, retried, deadline)
                if pause is None:
                    worker.raise_if_crashed()  # its heartbeat died: it stopped claiming
                    return worker.stats.claimed
                worker.executor.wait_for_change(pause)
                continue
            if deadline is not None and time.monotonic() > deadline:
                running = len(worker.executor.in_flight())
                worker.stop(timeout=0)
                raise TimeoutError(
                    f"run_until_idle did not finish within {timeout:g} s; {running} job(s) "
                    "were still running and were released to run again."
                )
            if not claimed:
                worker.executor.wait_for_change(0.05)
    finally:
        worker.stop()


def _until_next_retry(store: JobStore, retried: set[str], deadline: float | None) -> float | None:
    """Seconds until the next pending retry among ``retried`` that is due before
    ``deadline`` (forgetting the others), or ``None`` when there is none."""
    if not retried:
        return None
    now = store.database_time()
    waits = []
    for job_id in list(retried):
        job = store.get_job(job_id)
        if job is None or job.status is not JobStatus.PENDING:
            retried.discard(job_id)  # it ran again, or was canceled or deleted
            continue
        wait = max((job.scheduled_at - now).total_seconds(), 0.0)
        if deadline is not None and time.monotonic() + wait > deadline:
            retried.discard(job_id)  # due after the timeout: left PENDING
            continue
        waits.append(wait)
    # A small floor: the database clock may be a little behind this one.
    return max(min(waits), 0.01) if waits else None

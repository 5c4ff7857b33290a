"""Chains in the engine: what follows a step's end besides its store write.

The store releases the next step inside the success's own write
(:class:`ratchet.spi.SupportsChains`), so a success needs nothing here. A step that failed
for good (dead-lettered by its runner or by crash recovery) or was canceled takes the rest
of its chain with it: :func:`cancel_rest_of_chain`, called once that write is recorded.
A crash between the two writes (or, on a store without multi-document transactions,
between a success and its release) is settled by the orphan scan's
:func:`settle_chains`. :func:`previous_result` is what ``current_job().previous`` reads.
"""

from __future__ import annotations

from ratchet._engine.lifecycle import Lifecycle
from ratchet._logs import get_logger
from ratchet._payloads import Payloads
from ratchet._results import JobResult
from ratchet._types import Job, JobStatus
from ratchet.spi import JobStore, SupportsArchiveAccess, SupportsChains

__all__ = ["cancel_rest_of_chain", "job_result", "previous_result", "read_job", "settle_chains"]

log = get_logger("ratchet.worker")


def cancel_rest_of_chain(
    store: JobStore, job_id: str, lifecycle: Lifecycle | None = None
) -> list[str]:
    """Cancel the steps waiting behind ``job_id``, which failed for good or was canceled;
    the ids canceled (none on a store without chains), each announced through
    ``lifecycle`` (a :class:`~ratchet.events.JobCanceled`). A store error is logged, not
    raised: the orphan scan's settling finishes the cancel."""
    if not isinstance(store, SupportsChains):
        return []
    try:
        canceled = store.cancel_dependents(job_id)
    except Exception as exc:
        log.warning(
            "Could not cancel the chain steps after job %s yet (%s); the orphan scan will.",
            job_id,
            exc,
            extra={"event": "chain_cancel_deferred", "job_id": job_id},
        )
        return []
    if canceled and lifecycle is not None:
        lifecycle.canceled(store, canceled)
    if canceled:
        log.info(
            "Job %s did not succeed: canceled the %d chain step(s) after it.",
            job_id,
            len(canceled),
            extra={"event": "chain_canceled", "job_id": job_id},
        )
    return canceled


def settle_chains(store: JobStore, *, limit: int) -> int:
    """Release or cancel the chain steps a crash left WAITING behind an ended step (the
    orphan scan runs it under its lock); how many changed."""
    if not isinstance(store, SupportsChains):
        return 0
    return store.settle_waiting_jobs(limit=limit)


def previous_result(store: JobStore, payloads: Payloads, job_id: str) -> JobResult | None:
    """How the step before ``job_id`` in its chain ended, or ``None`` outside a chain (or
    when that step is gone from the store and its archive). Its result is opened when it
    was sealed and this process has the key."""
    job = store.get_job(job_id)
    if job is None or job.depends_on is None:
        return None
    before = read_job(store, job.depends_on)
    if before is None:
        return None
    return job_result(payloads.open_job(before))


def read_job(store: JobStore, job_id: str) -> Job | None:
    """``job_id`` from the live jobs, else from the archive (when the store reads it)."""
    job = store.get_job(job_id)
    if job is None and isinstance(store, SupportsArchiveAccess):
        job = store.get_archived_job(job_id)
    return job


def job_result(job: Job) -> JobResult:
    """How ``job`` (as read, its values opened) ended, as a :class:`JobResult`."""
    duration = None
    if job.started_at is not None and job.finished_at is not None:
        duration = (job.finished_at - job.started_at).total_seconds()
    succeeded = job.status is JobStatus.SUCCEEDED
    return JobResult(
        job_id=job.id,
        name=job.name,
        succeeded=succeeded,
        attempt=job.attempts,
        value=job.result,  # a failed job has none (a batch's record keeps its counts)
        error=None if succeeded else job.last_error,
        duration_seconds=duration,
        params=dict(job.params),
    )

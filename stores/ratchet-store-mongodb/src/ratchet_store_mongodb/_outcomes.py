"""Outcomes of the MongoDB store: complete, fail, retry, release, snooze (``SupportsSnooze``),
mark started, cancel (a PENDING job, or a RUNNING claim: ``SupportsRunningCancel``), retry
a failed job (one, or a batch: ``SupportsBulkRetry``), and late outcomes.

Contract kept (``ratchet.spi.JobQueue`` and ``ExecutionLog.record_late_outcome``): an
outcome of a claim is one fenced transition (:meth:`FencedCollections._job_cas`) that
applies only while the job is RUNNING under exactly that ``claim_seq``; otherwise it
changes nothing and returns ``False``, so a worker that lost its claim never overwrites
the new owner's outcome. The winner then closes the claim's execution record. A cancel
of a running claim is such an outcome too, so it and the claim's own outcome (or a second
cancel, or an orphan reset) compete for the same version and exactly one wins. A late
outcome touches the execution record only, never the job. A bulk retry goes job by job
through the fenced single retry (the store uses no multi-document transaction), so each
job is moved wholly or not at all and a concurrent retry of the same job has one winner.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import ExecutionStatus, JobStatus, get_logger, retry_blocked_by_business_key
from ratchet_store_mongodb._fencing import Doc, ms, unavailable
from ratchet_store_mongodb._keys import KeyReservations

__all__ = ["OutcomeOperations", "while_claimed"]


def while_claimed(
    claim_seq: int, changes: dict[str, Any]
) -> Callable[[Doc, datetime], dict[str, Any] | None]:
    """A ``decide`` for :meth:`FencedCollections._job_cas`: ``changes`` while the job is
    RUNNING under ``claim_seq``, nothing otherwise."""

    def decide(job: Doc, _now: datetime) -> dict[str, Any] | None:
        running = job["status"] == JobStatus.RUNNING.value
        return changes if running and int(job["claim_seq"]) == claim_seq else None

    return decide


log = get_logger("ratchet.stores.mongodb")

#: The statuses ``cancel_job`` (and the cancels by tag and business key) take to CANCELED.
_CANCELABLE = (JobStatus.PENDING.value, JobStatus.PAUSED.value, JobStatus.WAITING.value)


class OutcomeOperations(KeyReservations):
    """The fenced outcomes of a claim, cancel, and retry of a dead-lettered job."""

    if TYPE_CHECKING:
        # Supplied by ChainOperations; declared for the type checker only, so that it
        # never shadows the real method in the composed store.
        def _release_dependents(self, job_id: str) -> int: ...

    def _close_execution(
        self,
        job_id: str,
        claim_seq: int,
        *,
        status: ExecutionStatus,
        message: str | None,
        now: datetime,
    ) -> None:
        self._executions.update_one(
            {"_id": f"{job_id}:{claim_seq}"},
            {"$set": {"status": status.value, "message": message, "finished_at": now}},
        )

    def _fenced_outcome(
        self,
        job_id: str,
        claim_seq: int,
        changes: Callable[[Doc, datetime], dict[str, Any]],
        execution_status: ExecutionStatus,
        message: str | None,
    ) -> bool:
        def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
            if job["status"] != JobStatus.RUNNING.value or int(job["claim_seq"]) != claim_seq:
                return None
            return changes(job, now)

        done = self._job_cas(job_id, decide)
        if done is None:
            return False
        after = done[1]
        self._close_execution(
            job_id, claim_seq, status=execution_status, message=message, now=after["updated_at"]
        )
        return True

    @unavailable
    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        """The fenced success, then the release of the chain steps waiting for it (a crash
        in between is settled by ``settle_waiting_jobs``: ``_chains``)."""
        completed = self._fenced_outcome(
            job_id,
            claim_seq,
            lambda job, now: {
                "status": JobStatus.SUCCEEDED.value,
                "attempts": int(job["attempts"]) + 1,
                "result_json": result_json,
                "result_type": result_type,
                "owner": None,
                "finished_at": now,
            },
            ExecutionStatus.SUCCEEDED,
            None,
        )
        if completed:
            try:
                self._release_dependents(job_id)
            except Exception as exc:  # the success stands: the orphan scan releases them
                log.warning(
                    "Job %s succeeded, but the chain steps after it could not be released "
                    "yet (%s); the orphan scan will.",
                    job_id,
                    exc,
                )
        return completed

    @unavailable
    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        # A transition like any other (the rev token): it cannot slip between an orphan
        # reset's read and write; a claim that moved on is not marked.
        marked = self._job_cas(job_id, while_claimed(claim_seq, {"started_seq": claim_seq}))
        return marked is not None

    @unavailable
    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda job, now: {
                "status": JobStatus.FAILED.value,
                "attempts": int(job["attempts"]) + int(count_attempt),
                "last_error": error,
                "owner": None,
                "finished_at": now,
            },
            ExecutionStatus.FAILED,
            error,
        )

    @unavailable
    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda job, now: {
                "status": JobStatus.PENDING.value,
                "attempts": int(job["attempts"]) + 1,
                "last_error": error,
                "owner": None,
                "claimed_at": None,
                "scheduled_at": now + ms(delay_seconds),
            },
            ExecutionStatus.FAILED,
            error,
        )

    @unavailable
    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda _job, now: {
                "status": JobStatus.PENDING.value,
                "owner": None,
                "claimed_at": None,
                "scheduled_at": now,
            },
            ExecutionStatus.RELEASED,
            message,
        )

    @unavailable
    def snooze_job(
        self, job_id: str, claim_seq: int, *, delay_seconds: float, message: str
    ) -> bool:
        """SupportsSnooze: release_claim's transition, due ``delay_seconds`` after the
        database time of the write."""
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda _job, now: {
                "status": JobStatus.PENDING.value,
                "owner": None,
                "claimed_at": None,
                "scheduled_at": now + ms(delay_seconds),
            },
            ExecutionStatus.RELEASED,
            message,
        )

    def _cancel(self, job_id: str, doc: Doc | None = None) -> bool:
        def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
            if job["status"] not in _CANCELABLE:
                return None
            return {"status": JobStatus.CANCELED.value, "finished_at": now}

        return self._job_cas(job_id, decide, doc=doc) is not None

    @unavailable
    def cancel_job(self, job_id: str) -> bool:
        return self._cancel(job_id)

    def _move(self, job_id: str, source: JobStatus, target: JobStatus) -> bool:
        """``source`` → ``target``, fenced by ``rev`` like every transition, so a claim
        that read the job before the move loses its own fenced write."""

        def decide(job: Doc, _now: datetime) -> dict[str, Any] | None:
            return {"status": target.value} if job["status"] == source.value else None

        return self._job_cas(job_id, decide) is not None

    @unavailable
    def pause_job(self, job_id: str) -> bool:
        """SupportsJobPause: PENDING → PAUSED."""
        return self._move(job_id, JobStatus.PENDING, JobStatus.PAUSED)

    @unavailable
    def resume_job(self, job_id: str) -> bool:
        """SupportsJobPause: PAUSED → PENDING, ``scheduled_at`` kept."""
        return self._move(job_id, JobStatus.PAUSED, JobStatus.PENDING)

    @unavailable
    def cancel_running_job(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        """SupportsRunningCancel: a fenced outcome to CANCELED (``attempts`` and
        ``crash_count`` unchanged), the claim's execution record closed FAILED with
        ``message``. Leaving RUNNING frees the business key, as for ``cancel_job``: its
        holder is read from the job's status."""
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda _job, now: {
                "status": JobStatus.CANCELED.value,
                "owner": None,
                "finished_at": now,
            },
            ExecutionStatus.FAILED,
            message,
        )

    @unavailable
    def retry_failed_job(self, job_id: str) -> bool:
        job = self._jobs.find_one({"_id": job_id})
        if job is None or job["status"] != JobStatus.FAILED.value:
            return False
        key = job.get("business_key")
        gen: int | None = None
        if key is not None:
            now = self._now()
            try:
                gen = self._reserve_business_key(key, job_id, now)
            except BusinessKeyConflictError as exc:
                raise retry_blocked_by_business_key(job_id, key, exc.existing_job_id) from None

        def decide(doc: Doc, now: datetime) -> dict[str, Any] | None:
            if doc["status"] != JobStatus.FAILED.value:
                return None
            return {
                "status": JobStatus.PENDING.value,
                "attempts": 0,
                "last_error": None,
                "scheduled_at": now,
                "finished_at": None,
                "owner": None,
                "claimed_at": None,
            }

        try:
            return self._job_cas(job_id, decide) is not None
        finally:
            if key is not None and gen is not None:
                self._end_pending_reservation(key, job_id, gen)

    @unavailable
    def retry_failed_jobs(self, *, name: str | None, tag: str | None, limit: int) -> list[str]:
        if int(limit) <= 0:
            return []
        query: dict[str, Any] = {"status": JobStatus.FAILED.value}
        if name is not None:
            query["name"] = name
        if tag is not None:
            query["tags"] = tag
        retried: list[str] = []
        oldest_first = [("finished_at", ASCENDING), ("_id", ASCENDING)]
        for doc in self._jobs.find(query, {"_id": 1}).sort(oldest_first):
            if len(retried) >= int(limit):
                break
            try:
                if self.retry_failed_job(doc["_id"]):  # lost to a concurrent retry otherwise
                    retried.append(doc["_id"])
            except BusinessKeyConflictError:
                continue  # an active job holds its key: it stays FAILED, skipped
        return retried

    @unavailable
    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        execution = self._executions.find_one({"_id": f"{job_id}:{claim_seq}"})
        if execution is None:
            return False
        job = self._jobs.find_one({"_id": job_id}, {"status": 1, "claim_seq": 1})
        if (
            job is not None
            and job["status"] == JobStatus.RUNNING.value
            and int(job["claim_seq"]) == claim_seq
        ):
            return False
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        finished = execution.get("finished_at") or self._now()
        self._close_execution(job_id, claim_seq, status=status, message=message, now=finished)
        return True

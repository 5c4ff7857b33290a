"""Retention of the MongoDB store: archive finished jobs, purge dead letters (all at once,
or in batches: ``SupportsArchiveAccess``), the archive and execution records.

Contract kept (``ratchet.spi.ArchiveStore``): the cut-off comes from the database clock.
Removing a job is fenced by its ``rev`` like every other transition, so a concurrent
``retry_failed_job`` either wins first (the job is no longer finished and stays) or finds
nothing. The job's transition tokens go with it; its idempotency key and fire records stay.
Execution records still RUNNING are never purged.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from pymongo import ASCENDING

from ratchet.spi import ExecutionStatus, JobStatus
from ratchet_store_mongodb._fencing import Doc, FencedCollections, ms, unavailable

__all__ = ["ArchiveOperations"]

_FINISHED = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value, JobStatus.CANCELED.value)
_NOT_ARCHIVED = frozenset({"rev", "started_seq", "redeliveries"})


class ArchiveOperations(FencedCollections):
    """ArchiveStore: ``archive_finished_jobs``, ``purge_failed_jobs``, ``purge_executions``;
    SupportsArchiveAccess: ``purge_archived_jobs``, ``purge_dead_letters`` (its reads are
    in ``_reads``)."""

    def _finished_before(self, statuses: Sequence[str], cut: datetime, limit: int) -> Iterator[Doc]:
        cursor = self._jobs.find(
            {"status": {"$in": list(statuses)}, "finished_at": {"$lt": cut}}
        ).sort("finished_at", ASCENDING)
        if limit > 0:
            cursor = cursor.limit(limit)
        return iter(cursor)

    def _remove_job(self, doc: Doc, now: datetime, *, archive: bool) -> bool:
        """Delete a finished job, fenced like every transition (a concurrent
        ``retry_failed_job`` either wins before, or finds nothing)."""
        job_id, rev = str(doc["_id"]), int(doc.get("rev", 0))
        marker = {"status": doc["status"], "removing": True}
        if not self._fence(
            "job", job_id, rev, collection=self._jobs, version_field="rev", changes=marker, now=now
        ):
            return False
        if archive:
            # The archive keeps the job's recorded columns, as the SQL stores' archive table
            # does: not the fencing version nor the crash-recovery bookkeeping.
            copy = {key: value for key, value in doc.items() if key not in _NOT_ARCHIVED}
            self._archive.replace_one({"_id": job_id}, {**copy, "archived_at": now}, upsert=True)
        self._jobs.delete_one({"_id": job_id})
        self._tokens.delete_many({"ref": f"job:{job_id}"})
        return True

    @unavailable
    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - ms(older_than_seconds)
        return sum(
            self._remove_job(doc, now, archive=True)
            for doc in self._finished_before(_FINISHED, cut, batch_size)
        )

    @unavailable
    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        now = self._now()
        cut = now - ms(older_than_seconds)
        return sum(
            self._remove_job(doc, now, archive=False)
            for doc in self._finished_before([JobStatus.FAILED.value], cut, 0)
        )

    @unavailable
    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - ms(older_than_seconds)
        ids = [
            doc["_id"]
            for doc in self._executions.find(
                {"status": {"$ne": ExecutionStatus.RUNNING.value}, "finished_at": {"$lt": cut}},
                {"_id": 1},
            )
            .sort("finished_at", ASCENDING)
            .limit(batch_size)
        ]
        if not ids:
            return 0
        return int(self._executions.delete_many({"_id": {"$in": ids}}).deleted_count)

    @unavailable
    def purge_dead_letters(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - ms(older_than_seconds)
        return sum(
            self._remove_job(doc, now, archive=False)
            for doc in self._finished_before([JobStatus.FAILED.value], cut, batch_size)
        )

    @unavailable
    def purge_archived_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - ms(older_than_seconds)
        ids = [
            doc["_id"]
            for doc in self._archive.find({"finished_at": {"$lt": cut}}, {"_id": 1})
            .sort("finished_at", ASCENDING)
            .limit(batch_size)
        ]
        if not ids:
            return 0
        return int(self._archive.delete_many({"_id": {"$in": ids}}).deleted_count)

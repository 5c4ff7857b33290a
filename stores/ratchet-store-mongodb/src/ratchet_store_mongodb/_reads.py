"""Reads of the MongoDB store: jobs, counts, queue ages, key look-ups, execution records,
and which of a node's running jobs were canceled (``SupportsRunningCancel``).

Contract kept (``ratchet.spi.JobQueue`` reads and ``ExecutionLog.list_executions``): every
method only reads, so each is retried once after a lost connection (``idempotent``); a
closed store raises :class:`~ratchet.errors.RatchetError`. Archived jobs live in another
collection and are never returned, except by the archive's own reads
(``SupportsArchiveAccess``: ``get_archived_job``, ``list_archived_jobs``). Keys match
exactly, as stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import ASCENDING, DESCENDING

from ratchet.spi import Execution, Job, JobPriority, JobStatus
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._keys import ACTIVE
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import aware, execution_from_doc, job_from_doc

__all__ = ["ID_CHUNK", "ReadOperations"]

#: At most this many ids go into one ``$in`` filter: a long list becomes several reads,
#: each well inside the server's 16 MiB command limit.
ID_CHUNK = 1000


class ReadOperations(FencedCollections):
    """Look-ups of jobs and of the executions of a job."""

    @unavailable
    @idempotent
    def get_job(self, job_id: str) -> Job | None:
        self._check_open()
        doc = self._jobs.find_one({"_id": job_id})
        return None if doc is None else job_from_doc(doc)

    @unavailable
    @idempotent
    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        self._check_open()
        query: Doc = {}
        if status is not None:
            query["status"] = JobStatus(status).value
        if tag is not None:
            query["tags"] = tag
        cursor = (
            self._jobs.find(query)
            .sort([("created_at", DESCENDING), ("_id", DESCENDING)])
            .limit(int(limit))
        )
        return [job_from_doc(doc) for doc in cursor]

    @unavailable
    @idempotent
    def get_archived_job(self, job_id: str) -> Job | None:
        self._check_open()
        doc = self._archive.find_one({"_id": job_id})
        return None if doc is None else job_from_doc(doc)

    @unavailable
    @idempotent
    def list_archived_jobs(
        self, *, status: JobStatus | None, tag: str | None, limit: int
    ) -> list[Job]:
        self._check_open()
        if int(limit) <= 0:
            return []
        query: Doc = {}
        if status is not None:
            query["status"] = JobStatus(status).value
        if tag is not None:
            query["tags"] = tag
        cursor = (
            self._archive.find(query)
            .sort([("created_at", DESCENDING), ("_id", DESCENDING)])
            .limit(int(limit))
        )
        return [job_from_doc(doc) for doc in cursor]

    @unavailable
    @idempotent
    def count_jobs(self) -> dict[JobStatus, int]:
        self._check_open()
        return {
            status: self._jobs.count_documents({"status": status.value}) for status in JobStatus
        }

    @unavailable
    @idempotent
    def oldest_pending_ages(self) -> dict[int, float]:
        """SupportsPendingAges: per priority, the first due PENDING job in claim order (one
        short range of the claim index each, as the claim reads them), measured against
        one database time."""
        self._check_open()
        now = self._now()
        ages: dict[int, float] = {}
        for priority in JobPriority:
            doc = self._jobs.find_one(
                {
                    "status": JobStatus.PENDING.value,
                    "priority": int(priority),
                    "scheduled_at": {"$lte": now},
                },
                projection={"scheduled_at": 1},
                sort=[("scheduled_at", ASCENDING)],
            )
            if doc is not None:
                waited = (now - aware(doc["scheduled_at"])).total_seconds()
                ages[int(priority)] = max(0.0, waited)
        return ages

    @unavailable
    @idempotent
    def has_due_or_running_jobs(self) -> bool:
        """SupportsActivityProbe: one RUNNING job, or per priority one due PENDING job (a
        short range of the claim index each, as the claim reads them)."""
        self._check_open()
        if self._jobs.find_one({"status": JobStatus.RUNNING.value}, projection={"_id": 1}):
            return True
        now = self._now()
        return any(
            self._jobs.find_one(
                {
                    "status": JobStatus.PENDING.value,
                    "priority": int(priority),
                    "scheduled_at": {"$lte": now},
                },
                projection={"_id": 1},
                sort=[("scheduled_at", ASCENDING)],
            )
            is not None
            for priority in sorted(JobPriority, reverse=True)
        )

    @unavailable
    @idempotent
    def canceled_among(self, job_ids: Sequence[str]) -> frozenset[str]:
        """SupportsRunningCancel: one read of the ``_id`` index per :data:`ID_CHUNK` ids,
        projecting ids only; no ids, no read. Archived jobs are in another collection, so
        they are left out."""
        self._check_open()
        ids = list(dict.fromkeys(job_ids))
        canceled: set[str] = set()
        for start in range(0, len(ids), ID_CHUNK):
            query = {
                "_id": {"$in": ids[start : start + ID_CHUNK]},
                "status": JobStatus.CANCELED.value,
            }
            canceled.update(str(doc["_id"]) for doc in self._jobs.find(query, {"_id": 1}))
        return frozenset(canceled)

    @unavailable
    @idempotent
    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        self._check_open()
        doc = self._idempotency.find_one({"_id": key})
        return None if doc is None else str(doc["job_id"])

    @unavailable
    @idempotent
    def find_active_job_by_business_key(self, key: str) -> Job | None:
        self._check_open()
        doc = self._jobs.find_one({"business_key": key, "status": {"$in": list(ACTIVE)}})
        return None if doc is None else job_from_doc(doc)

    @unavailable
    @idempotent
    def list_executions(self, job_id: str) -> list[Execution]:
        self._check_open()
        cursor = self._executions.find({"job_id": job_id}).sort("claim_seq", ASCENDING)
        return [execution_from_doc(doc) for doc in cursor]

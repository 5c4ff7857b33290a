"""Batches of the MongoDB store (``ratchet.spi.SupportsBatches``).

Contract kept: a batch's record (a job with ``batch_total``) is stored WAITING and never
claimed; its children carry ``batch_id``. :meth:`BatchOperations.complete_batch` probes
the index ``(batch_id, status)`` for an active child, counts the children when there is
none, and moves the record from WAITING to its end with a transition fenced by its
``rev``, so of two nodes finishing the last two children one completes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ratchet.spi import BatchCounts, Job, JobStatus
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import job_from_doc

__all__ = ["BatchOperations"]

_WAITING = JobStatus.WAITING.value
_ACTIVE = [
    JobStatus.PENDING.value,
    JobStatus.RUNNING.value,
    JobStatus.PAUSED.value,
    JobStatus.WAITING.value,
]
_NOT_STARTED = [JobStatus.PENDING.value, JobStatus.PAUSED.value, JobStatus.WAITING.value]
_ENDED = {
    JobStatus.SUCCEEDED.value: "succeeded",
    JobStatus.FAILED.value: "failed",
    JobStatus.CANCELED.value: "canceled",
}


class BatchOperations(FencedCollections):
    def _active_child(self, batch_id: str) -> bool:
        return (
            self._jobs.find_one({"batch_id": batch_id, "status": {"$in": _ACTIVE}}, {"_id": 1})
            is not None
        )

    def _counts(self, batch_id: str) -> BatchCounts:
        found = {"active": 0, "succeeded": 0, "failed": 0, "canceled": 0}
        for status in (*_ACTIVE, *_ENDED):
            count = self._jobs.count_documents({"batch_id": batch_id, "status": status})
            found[_ENDED.get(status, "active")] += count
        return BatchCounts(**found)

    @unavailable
    def complete_batch(self, batch_id: str) -> BatchCounts | None:
        self._check_open()
        record = self._jobs.find_one({"_id": batch_id}, {"status": 1, "batch_total": 1})
        if record is None or record["status"] != _WAITING or record.get("batch_total") is None:
            return None  # no such batch (yet: a streaming batch's record comes last)
        if self._active_child(batch_id):
            return None
        counts = self._counts(batch_id)
        if counts.active:
            return None
        ended = JobStatus.SUCCEEDED if counts.ended == counts.succeeded else JobStatus.FAILED

        def decide(record: Doc, now: datetime) -> dict[str, Any] | None:
            if record["status"] != _WAITING or record.get("batch_total") is None:
                return None
            return {
                "status": ended.value,
                "result_json": counts.to_json(),
                "result_type": "dict",
                "finished_at": now,
            }

        return counts if self._job_cas(batch_id, decide) is not None else None

    @unavailable
    @idempotent
    def batch_counts(self, batch_id: str) -> BatchCounts:
        self._check_open()
        return self._counts(batch_id)

    @unavailable
    @idempotent
    def ready_batches(self, *, limit: int) -> list[str]:
        self._check_open()
        if int(limit) <= 0:
            return []
        ready: list[str] = []
        records = self._jobs.find(
            {"status": _WAITING, "batch_total": {"$ne": None}}, {"_id": 1}, sort=[("_id", 1)]
        )
        for record in records:
            if not self._active_child(str(record["_id"])):
                ready.append(str(record["_id"]))
                if len(ready) >= limit:
                    break
        return ready

    @unavailable
    def cancel_batch_children(self, batch_id: str) -> int:
        """Each child still to start, a transition fenced by its ``rev`` (so a claim that
        read it before loses, and a child claimed first is left to run)."""
        self._check_open()

        def cancel(job: Doc, now: datetime) -> dict[str, Any] | None:
            if job["status"] not in _NOT_STARTED:
                return None
            return {"status": JobStatus.CANCELED.value, "finished_at": now}

        waiting = self._jobs.find({"batch_id": batch_id, "status": {"$in": _NOT_STARTED}})
        return sum(self._job_cas(str(doc["_id"]), cancel, doc=doc) is not None for doc in waiting)

    @unavailable
    @idempotent
    def list_batches(self, *, limit: int) -> list[Job]:
        self._check_open()
        if int(limit) <= 0:
            return []
        docs = self._jobs.find(
            {"batch_total": {"$ne": None}},
            sort=[("created_at", -1), ("_id", -1)],
            limit=int(limit),
        )
        return [job_from_doc(doc) for doc in docs]

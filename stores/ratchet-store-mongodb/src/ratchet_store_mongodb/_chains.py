"""Chains of the MongoDB store (``ratchet.spi.SupportsChains``).

Contract kept: a job with ``depends_on`` is stored WAITING (``_rows.new_job_doc``) and no
claim reads WAITING documents. A success releases the steps waiting for it right after
its own fenced write (:meth:`ChainOperations._release_dependents`, called by
``complete_job``): the store has no transaction over two documents, so a crash between
the two leaves the next step WAITING behind a SUCCEEDED job, which
:meth:`ChainOperations.settle_waiting_jobs` (run by the maintenance loop) releases.
Every change of a WAITING document is a transition fenced by its ``rev`` like any other,
so a release, a cancel and a settle racing over one step change it once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ratchet.spi import Job, JobStatus, dependency_failed_message
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import job_from_doc

__all__ = ["ChainOperations"]

_WAITING = JobStatus.WAITING.value
_ENDED = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value, JobStatus.CANCELED.value)


def _released(job: Doc, now: datetime) -> dict[str, Any] | None:
    if job["status"] != _WAITING:
        return None
    return {"status": JobStatus.PENDING.value, "scheduled_at": now}


def _canceled_after(predecessor: str) -> Any:
    message = dependency_failed_message(predecessor)

    def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
        if job["status"] != _WAITING:
            return None
        return {"status": JobStatus.CANCELED.value, "finished_at": now, "last_error": message}

    return decide


class ChainOperations(FencedCollections):
    def _waiting_behind(self, job_ids: list[str]) -> list[Doc]:
        return list(self._jobs.find({"depends_on": {"$in": job_ids}, "status": _WAITING}))

    def _release_dependents(self, job_id: str) -> int:
        """After ``job_id``'s success was written: its WAITING steps -> PENDING, due now.
        A workflow branch waits for the engine's resolution (``_workflows``)."""
        return sum(
            self._job_cas(str(doc["_id"]), _released, doc=doc) is not None
            for doc in self._waiting_behind([job_id])
            if doc.get("branch_json") is None
        )

    @unavailable
    def cancel_dependents(self, job_id: str) -> list[str]:
        self._check_open()
        decide = _canceled_after(job_id)
        canceled: list[str] = []
        level = [job_id]
        while level:
            docs = self._waiting_behind(level)
            level = [str(d["_id"]) for d in docs if self._job_cas(str(d["_id"]), decide, doc=d)]
            canceled += level
        return canceled

    @unavailable
    def settle_waiting_jobs(self, *, limit: int) -> int:
        self._check_open()
        if int(limit) <= 0:
            return 0
        changed = 0
        waiting = self._jobs.find(
            {"status": _WAITING, "depends_on": {"$ne": None}, "branch_json": None},
            sort=[("_id", 1)],
        )
        for doc in waiting:
            if changed >= limit:
                break
            predecessor = str(doc["depends_on"])
            found = self._jobs.find_one({"_id": predecessor}, {"status": 1})
            if found is None:
                found = self._archive.find_one({"_id": predecessor}, {"status": 1})
            status = None if found is None else found["status"]
            if status is not None and status not in _ENDED:
                continue  # still to run: its own success or failure will settle this step
            decide = (
                _released if status == JobStatus.SUCCEEDED.value else _canceled_after(predecessor)
            )
            if self._job_cas(str(doc["_id"]), decide, doc=doc) is not None:
                changed += 1
        return changed

    @unavailable
    @idempotent
    def dependents(self, job_id: str) -> list[Job]:
        self._check_open()
        docs = self._jobs.find({"depends_on": job_id}, sort=[("created_at", 1), ("_id", 1)])
        return [job_from_doc(doc) for doc in docs]

"""Workflows of the MongoDB store (``ratchet.spi.SupportsWorkflows``).

Contract kept: a branch (a job with ``branch_json``) is stored WAITING; the parent's
success does not release it (``_chains._release_dependents`` skips it) and the settling
scan leaves it. The store has no transaction over several documents, so a resolution
first records its decision on the parent (``branch_decision``: the winner's id, or ``""``
for none), with a transition fenced by the parent's ``rev``: only the first decision
holds, and every later call (a racing resolver, or the maintenance scan after a crash
half-way) applies that recorded decision, not its own. Each branch then changes with its
own fenced transition, so every branch changes once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ratchet.spi import JobStatus
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent

__all__ = ["WorkflowOperations"]

_WAITING = JobStatus.WAITING.value
_ENDED = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value, JobStatus.CANCELED.value)
_NO_WINNER = ""


def _ended_by(winner: str, message: str) -> Any:
    def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
        if job["status"] != _WAITING or job.get("branch_json") is None:
            return None
        if str(job["_id"]) == winner:
            return {"status": JobStatus.PENDING.value, "scheduled_at": now}
        return {"status": JobStatus.CANCELED.value, "finished_at": now, "last_error": message}

    return decide


class WorkflowOperations(FencedCollections):
    def _waiting_branches(self, parent_id: str) -> list[Doc]:
        return list(
            self._jobs.find(
                {"depends_on": parent_id, "status": _WAITING, "branch_json": {"$ne": None}}
            )
        )

    def _decision(self, parent_id: str, winner: str | None) -> str:
        """The decision for ``parent_id``'s branches: the one recorded on it, else
        ``winner``, recorded now (a parent gone from the live jobs records nothing)."""
        proposed = _NO_WINNER if winner is None else winner

        def record(parent: Doc, _now: datetime) -> dict[str, Any] | None:
            return (
                None if parent.get("branch_decision") is not None else {"branch_decision": proposed}
            )

        if self._job_cas(parent_id, record) is not None:
            return proposed
        parent = self._jobs.find_one({"_id": parent_id}, {"branch_decision": 1})
        recorded = None if parent is None else parent.get("branch_decision")
        return proposed if recorded is None else str(recorded)

    @unavailable
    def resolve_branches(self, parent_id: str, *, winner: str | None, message: str) -> int:
        self._check_open()
        branches = self._waiting_branches(parent_id)
        if not branches:
            return 0
        decide = _ended_by(self._decision(parent_id, winner), message)
        return sum(self._job_cas(str(doc["_id"]), decide, doc=doc) is not None for doc in branches)

    @unavailable
    def cancel_branch(self, job_id: str, *, message: str) -> bool:
        self._check_open()
        return self._job_cas(job_id, _ended_by(_NO_WINNER, message)) is not None

    @unavailable
    @idempotent
    def branch_parents(self, *, limit: int) -> list[str]:
        self._check_open()
        if int(limit) <= 0:
            return []
        parents: list[str] = []
        waiting = self._jobs.find(
            {"status": _WAITING, "branch_json": {"$ne": None}},
            {"depends_on": 1},
            sort=[("_id", 1)],
        )
        for doc in waiting:
            parent_id = str(doc["depends_on"])
            if parent_id in parents:
                continue
            parent = self._jobs.find_one({"_id": parent_id}, {"status": 1})
            if parent is None or parent["status"] in _ENDED:
                parents.append(parent_id)
                if len(parents) >= limit:
                    break
        return parents

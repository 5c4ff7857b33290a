"""The cluster parts of the MongoDB store: nodes, locks, orphan recovery, and closing
stale execution records.

Contracts kept (``ratchet.spi.NodeRegistry``, ``LockStore``, ``OrphanRecoveryStore``):

* Heartbeats and the staleness cut-off use the database clock.
* A lock is a lease document that is never deleted: every change (take, renew, release)
  is fenced by its ``epoch``, so two nodes never both win the same lease; a renewal never
  shortens it.
* An orphan reset is a fenced transition that applies only while the job is still RUNNING
  under the claim the scan read; only a claim whose start was recorded is charged a crash,
  and a charged claim at the crash limit is reported ``exhausted`` instead of reset.

Recovery and drain are outcomes of claims: they stand on
:class:`~ratchet_store_mongodb._outcomes.OutcomeOperations` (``_fenced_outcome``,
``_close_execution``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    ExecutionStatus,
    JobStatus,
    NodeInfo,
    OrphanRecovery,
    check_lock_ttl,
)
from ratchet_store_mongodb._fencing import (
    RETRIES,
    Doc,
    ms,
    ms_ceil,
    retry_upsert_race,
    unavailable,
)
from ratchet_store_mongodb._outcomes import OutcomeOperations, while_claimed
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import aware, node_from_doc, redelivery_count, start_is_recorded

__all__ = ["ClusterOperations"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_Recovered = Literal["reset", "exhausted"]


class ClusterOperations(OutcomeOperations):
    """NodeRegistry, LockStore and OrphanRecoveryStore (``database_time`` is the base's).

    Built on :class:`OutcomeOperations`: a drain releases claims through the fenced
    outcome, and an orphan reset closes its execution record as an outcome does.
    """

    # -- nodes ---------------------------------------------------------------------------

    def _upsert_node(self, node_id: str, fields: Doc, on_insert: Doc) -> None:
        update: Doc = {"$set": fields}
        if on_insert:
            update["$setOnInsert"] = on_insert
        retry_upsert_race(lambda: self._nodes.update_one({"_id": node_id}, update, upsert=True))

    @unavailable
    @idempotent
    def register_node(self, node_id: str) -> None:
        now = self._now()
        self._upsert_node(node_id, {"started_at": now, "heartbeat_at": now}, {})

    @unavailable
    @idempotent
    def heartbeat(self, node_id: str) -> None:
        now = self._now()
        self._upsert_node(node_id, {"heartbeat_at": now}, {"started_at": now})

    @unavailable
    @idempotent
    def list_nodes(self) -> list[NodeInfo]:
        self._check_open()
        return [node_from_doc(d) for d in self._nodes.find().sort("heartbeat_at", DESCENDING)]

    @unavailable
    @idempotent
    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        cut = self._now() - ms(grace_seconds)
        cursor = self._nodes.find({"heartbeat_at": {"$lt": cut}}).sort("heartbeat_at", ASCENDING)
        return [node_from_doc(doc) for doc in cursor]

    @unavailable
    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        self._check_open()
        if not node_ids:
            return 0
        return int(self._nodes.delete_many({"_id": {"$in": list(node_ids)}}).deleted_count)

    # -- locks ---------------------------------------------------------------------------

    def _lock_cas(self, name: str, decide: Callable[[Doc | None, datetime], Doc | None]) -> bool:
        """Change the lease ``name`` as ``decide`` says, fenced by its ``epoch``."""
        for _ in range(RETRIES):
            now = self._now()
            lease = self._locks.find_one({"_id": name})
            fields = decide(lease, now)
            if fields is None:
                return False
            if lease is None:
                try:
                    self._locks.insert_one({"_id": name, "epoch": 0, **fields})
                    return True
                except DuplicateKeyError:
                    continue
            if self._fence(
                "lock",
                name,
                int(lease["epoch"]),
                collection=self._locks,
                version_field="epoch",
                changes=fields,
                now=now,
            ):
                return True
            if self._await_change(self._locks, name, "epoch", int(lease["epoch"])) is None:
                return False  # another acquirer holds this epoch and is writing it
        return False

    @unavailable
    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        check_lock_ttl(ttl_seconds)

        def decide(lease: Doc | None, now: datetime) -> Doc | None:
            if (
                lease is not None
                and lease.get("owner") not in (None, owner)
                and aware(lease["expires_at"]) > now
            ):
                return None
            return {"owner": owner, "acquired_at": now, "expires_at": now + ms_ceil(ttl_seconds)}

        return self._lock_cas(name, decide)

    @unavailable
    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        check_lock_ttl(ttl_seconds)

        def decide(lease: Doc | None, now: datetime) -> Doc | None:
            if lease is None or lease.get("owner") != owner or aware(lease["expires_at"]) <= now:
                return None
            # A renewal never shortens a lease.
            return {"expires_at": max(aware(lease["expires_at"]), now + ms_ceil(ttl_seconds))}

        return self._lock_cas(name, decide)

    @unavailable
    def release_lock(self, name: str, owner: str) -> None:
        def decide(lease: Doc | None, _now: datetime) -> Doc | None:
            if lease is None or lease.get("owner") != owner:
                return None
            # The lease document stays (its epoch keeps counting); it is simply free.
            return {"owner": None, "expires_at": _EPOCH}

        self._lock_cas(name, decide)

    # -- orphan recovery -----------------------------------------------------------------

    def _reset_orphan(
        self, job_id: str, claim_seq: int, max_crash_redeliveries: int
    ) -> _Recovered | None:
        """Reset one RUNNING claim of a dead node, charged only when its start was recorded.

        The charge is decided on the version the reset wins (a ``mark_started`` of the
        same claim is a transition too, so it lands either before or not at all).
        ``None``: the claim moved on meanwhile."""
        exhausted = False

        def decide(job: Doc, _now: datetime) -> dict[str, Any] | None:
            nonlocal exhausted
            exhausted = False
            if job["status"] != JobStatus.RUNNING.value or int(job["claim_seq"]) != claim_seq:
                return None
            started = start_is_recorded(job)
            if started and int(job["crash_count"]) >= max_crash_redeliveries:
                exhausted = True  # its start was recorded after the scan read it
                return None
            return {
                "status": JobStatus.PENDING.value,
                "owner": None,
                "claimed_at": None,
                "crash_count": int(job["crash_count"]) + int(started),
                "redeliveries": redelivery_count(job) + 1,
            }

        done = self._job_cas(job_id, decide)
        if done is None:
            return "exhausted" if exhausted else None
        before, after = done
        status, message = (
            (ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE)
            if start_is_recorded(before)
            else (ExecutionStatus.RELEASED, UNSTARTED_RECOVERED_MESSAGE)
        )
        self._close_execution(
            job_id, claim_seq, status=status, message=message, now=after["updated_at"]
        )
        return "reset"

    def _recover(
        self, docs: list[Doc], max_crash_redeliveries: int, limit: int, *, disown: bool
    ) -> OrphanRecovery:
        reset = 0
        exhausted: list[tuple[str, int]] = []
        for doc in docs:
            job_id, claim_seq = str(doc["_id"]), int(doc["claim_seq"])
            outcome: _Recovered | None = "exhausted"
            if not (start_is_recorded(doc) and int(doc["crash_count"]) >= max_crash_redeliveries):
                outcome = self._reset_orphan(job_id, claim_seq, max_crash_redeliveries)
            if outcome == "reset":
                reset += 1
            elif outcome == "exhausted":
                if disown:
                    self._job_cas(job_id, while_claimed(claim_seq, {"owner": None}))
                if len(exhausted) < limit:
                    exhausted.append((job_id, claim_seq))
        return OrphanRecovery(reset=reset, exhausted=tuple(exhausted))

    @unavailable
    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        now = self._now()
        cut = now - ms(grace_seconds)
        alive = {doc["_id"] for doc in self._nodes.find({"heartbeat_at": {"$gt": cut}}, {"_id": 1})}
        running = self._jobs.find(
            {"status": JobStatus.RUNNING.value, "claimed_at": {"$lte": cut}},
            {"claim_seq": 1, "crash_count": 1, "started_seq": 1, "owner": 1, "claimed_at": 1},
        ).sort("claimed_at", ASCENDING)
        orphans = [doc for doc in running if doc.get("owner") is None or doc["owner"] not in alive]
        return self._recover(orphans, max_crash_redeliveries, limit, disown=False)

    def _node_claims(self, node_id: str) -> list[Doc]:
        return list(
            self._jobs.find(
                {"status": JobStatus.RUNNING.value, "owner": node_id},
                {"claim_seq": 1, "crash_count": 1, "started_seq": 1, "claimed_at": 1},
            ).sort("claimed_at", ASCENDING)
        )

    @unavailable
    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        self._check_open()
        return self._recover(self._node_claims(node_id), max_crash_redeliveries, limit, disown=True)

    @unavailable
    def release_node_claims(self, node_id: str, *, message: str) -> int:
        self._check_open()
        released = 0
        for doc in self._node_claims(node_id):
            if self._fenced_outcome(
                str(doc["_id"]),
                int(doc["claim_seq"]),
                lambda _job, _now: {
                    "status": JobStatus.PENDING.value,
                    "owner": None,
                    "claimed_at": None,
                },
                ExecutionStatus.RELEASED,
                message,
            ):
                released += 1
        return released

    @unavailable
    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        now = self._now()
        cut = now - ms(grace_seconds)
        closed = 0
        for execution in self._executions.find({"status": ExecutionStatus.RUNNING.value}):
            if closed >= limit:
                break
            job = self._jobs.find_one(
                {"_id": execution["job_id"]}, {"status": 1, "claim_seq": 1, "updated_at": 1}
            )
            if job is None:
                continue
            if job["status"] == JobStatus.RUNNING.value and int(job["claim_seq"]) == int(
                execution["claim_seq"]
            ):
                continue
            if aware(job["updated_at"]) > cut:
                continue
            result = self._executions.update_one(
                {"_id": execution["_id"], "status": ExecutionStatus.RUNNING.value},
                {
                    "$set": {
                        "status": ExecutionStatus.FAILED.value,
                        "message": message,
                        "finished_at": now,
                    }
                },
            )
            closed += int(result.modified_count)
        return closed

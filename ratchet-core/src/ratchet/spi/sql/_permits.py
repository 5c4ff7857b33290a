"""The SQL stores' resource permits (:class:`ratchet.spi.SupportsResourcePermits`), written
once.

A resource's permits are **slots**: rows ``(resource, slot, job_id, claim_seq, node_id,
acquired_at)`` of ``ratchet_resource_slot`` (migration 0013), numbered from 0 and created
as they are first needed, so a resource has as many rows as it ever had holders at once
(never more than its limit). A slot holds a permit while its holder's claim is RUNNING:
every statement that judges a slot free or lists holders joins the job's row on ``(id,
claim_seq, status = 'RUNNING')``, so a claim that ended in any way (an outcome, a cancel,
orphan recovery, a drain) gives its permit back without a write on the outcome paths.

Why slots, not one row per resource locked while counting: acquirers of one resource then
take *different* rows, each with one guarded write, in parallel, so no row is hot (the
counting design queued every acquire of a resource on its row's lock; RESULTS.md, "The
cost of resource permits").

Safety, never more holders than the limit: each slot below the limit has at most one
holder, and no grant is made while a slot at or above the (lowered) limit has a live one.
A slot changes holder only through a write guarded by the holder it had when it was read
(a compare-and-set on ``job_id, claim_seq``), never by a liveness test evaluated in the
write itself: under READ COMMITTED a locking write re-checks its condition on the newest
row version but evaluates a subquery on *other* tables in its older snapshot, so a
"holder ended?" test there could see the new holder's claim as not yet RUNNING and evict
it. The reads that judge a holder ended see the slot and the job in one snapshot, and a
claim that ended never runs again, so a holder judged ended stays ended.

The acquire, two statements when a slot is free, none of them a transaction of its own:

1. ``select_permit_slots`` (a read, one snapshot): the limit; whether the claim is
   RUNNING; whether it holds a slot already (the same claim acquiring again); whether a
   slot at or above the limit has a live holder (a lowered limit not yet drained); the
   number a new slot would get; and up to :data:`_CANDIDATES` slots below the limit that
   are free (no holder, or one whose claim ended), each with the holder it has.
2. ``take_slot`` on one candidate, guarded by that holder (``IS NULL`` or the ended
   claim): the slot becomes the claim's. Acquirers start at different candidates (by
   the job id), so those of one node do not all contend for the lowest slot.
3. Else, below the limit, ``add_slot`` with the next number, which adds nothing when
   another acquirer added that number first.

After losing every candidate and the new slot to other acquirers the acquire reads again
(step 1): each loss is another acquirer's grant. Under REPEATABLE READ (a MySQL option) a
transaction keeps its first snapshot, which is why no step runs inside a longer
transaction. Every write also checks the acquiring claim is RUNNING, so nothing is ever
written for a claim that ended.
"""

from __future__ import annotations

import zlib

from ratchet._types import PermitHolder
from ratchet.spi._checks import (
    check_max_concurrent,
    check_resource_name,
    resource_not_configured,
)
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._session import Params, Row

__all__ = ["PERMIT_STATEMENTS", "SQLResourcePermits"]

PERMIT_STATEMENTS = frozenset(
    {
        "save_resource",  # resource, max_concurrent: insert or change the limit
        "select_resource_limit",  # resource -> (max_concurrent)
        # resource, id, claim_seq, candidates -> rows (max_concurrent, running, held, over,
        # next_slot, slot, job_id, claim_seq): the limit; 1 when the job is RUNNING with
        # claim_seq; 1 when that claim holds a slot of the resource; 1 when a slot
        # numbered max_concurrent or more has a live holder; the number after the last
        # slot (0 if none); then one row per free slot below the limit (no holder, or one
        # whose claim ended: job_id and claim_seq as stored), lowest first, at most
        # `candidates` rows; a single row with a NULL slot when none is free. No row for
        # a resource never configured.
        "select_permit_slots",
        # resource, slot, old_id, old_claim_seq, id, claim_seq, node_id: the slot's holder
        # becomes the claim (acquired_at database-now) when the holder still is
        # (old_id, old_claim_seq), both NULL for a slot without one, and the claim is
        # RUNNING; row count
        "take_slot",
        # resource, slot, id, claim_seq, node_id: insert the slot held by the claim when
        # it is RUNNING; nothing (row count 0) when the slot exists already
        "add_slot",
        # resource, id, claim_seq: the claim's slot becomes free; row count
        "free_slot",
        "free_node_slots",  # node_id: every slot held by the node becomes free; row count
        # -> (resource, job_id, claim_seq) of every held slot whose claim ended
        "select_all_ended_slots",
        # resource -> (resource, job_id, claim_seq, node_id, acquired_at) of live holders,
        # oldest first, then by job id
        "select_permit_holders",
    }
)
"""The resource-permit statements every SQL backend's ``.sql`` file provides."""

_CANDIDATES = 8
"""How many free slots one read offers an acquirer."""

_ACQUIRE_ROUNDS = 16
"""How many times an acquire reads again after other acquirers took every slot it tried.
Each such loss is another acquirer's grant, so running out needs many grants in the time
of one acquire; the acquire then answers ``False`` (a deferral, never an over-grant)."""


class SQLResourcePermits:
    """:class:`ratchet.spi.SupportsResourcePermits` for :class:`ratchet.spi.sql.SQLJobStore`
    (mixed into it): validation, the statements, the decoding."""

    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        raise NotImplementedError  # SQLJobStore's primitive

    def _check_text(self, what: str, value: str, *, key: bool = False) -> None:
        raise NotImplementedError  # SQLJobStore's check

    def _resource(self, name: str) -> str:
        self._check_text("Resource name", check_resource_name(name), key=True)
        return name

    def configure_resource(self, name: str, *, max_concurrent: int) -> None:
        params = {
            "resource": self._resource(name),
            "max_concurrent": check_max_concurrent(max_concurrent),
        }
        self._update("save_resource", params, idempotent=True)

    def resource_limit(self, name: str) -> int | None:
        rows = self._query("select_resource_limit", {"resource": self._resource(name)})
        return None if not rows else int(rows[0][0])

    def acquire_permit(self, resource: str, job_id: str, claim_seq: int, *, node_id: str) -> bool:
        """Hold a slot of ``resource`` for the claim: the steps of the module docstring."""
        self._check_text("Node id", node_id)
        params: Params = {
            "resource": self._resource(resource),
            "id": job_id,
            "claim_seq": int(claim_seq),
            "node_id": node_id,
            "candidates": _CANDIDATES,
        }
        for _ in range(_ACQUIRE_ROUNDS):
            rows = self._query("select_permit_slots", params)
            if not rows:
                raise resource_not_configured(resource)
            limit, running, held, over, next_slot = (int(value or 0) for value in rows[0][:5])
            if not running:
                return False
            if held:
                return True
            if over:
                return False
            free = [(slot, old_id, old_seq) for _, _, _, _, _, slot, old_id, old_seq in rows]
            if free[0][0] is None:
                free = []
            if free and self._take_one_of(free, params):
                return True
            if next_slot < limit:
                if self._update("add_slot", {**params, "slot": next_slot}) == 1:
                    return True
            elif len(free) < _CANDIDATES:
                return False  # every slot below the limit exists, and none was free
            # Other acquirers took what was offered (and added that slot first): read again.
        return False

    def _take_one_of(self, free: list[tuple[object, object, object]], params: Params) -> bool:
        """Take one of the ``free`` slots, starting at one chosen by the job id."""
        start = zlib.crc32(str(params["id"]).encode()) % len(free)
        for slot, old_id, old_seq in free[start:] + free[:start]:
            taken = {**params, "slot": slot, "old_id": old_id, "old_claim_seq": old_seq}
            if self._update("take_slot", taken) == 1:
                return True
        return False

    def release_permit(self, resource: str, job_id: str, claim_seq: int) -> bool:
        params = {"resource": self._resource(resource), "id": job_id, "claim_seq": int(claim_seq)}
        return self._update("free_slot", params, idempotent=True) >= 1

    def release_node_permits(self, node_id: str) -> int:
        return self._update("free_node_slots", {"node_id": node_id})

    def release_ended_permits(self) -> int:
        """Free each held slot whose claim ended, guarded by that holder (module docstring:
        a slot taken over meanwhile keeps its new holder)."""
        return sum(
            self._update("free_slot", {"resource": resource, "id": job_id, "claim_seq": seq})
            for resource, job_id, seq in self._query("select_all_ended_slots")
        )

    def permit_holders(self, resource: str) -> list[PermitHolder]:
        rows = self._query("select_permit_holders", {"resource": self._resource(resource)})
        return [
            PermitHolder(
                resource=self.decode.text(row[0]),
                job_id=self.decode.text(row[1]),
                claim_seq=int(row[2]),
                node_id=self.decode.text(row[3]),
                acquired_at=self.decode.time(row[4]),
            )
            for row in rows
        ]

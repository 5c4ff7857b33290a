"""The mutation catalogue, cluster-wide resource permits (``SupportsResourcePermits``).

Each store changes one statement (or one step) of the shared SQL layer's permits as the
embedded store runs them, the way a store author's one-line mistake would;
``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.errors import ResourceNotConfiguredError
from ratchet.spi.sql import Params
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

# The acquiring claim's check, in the acquire's read and in each write that grants a slot.
_RUNNING_CLAIM = "WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq"
_GRANTING = ("select_permit_slots", "take_slot", "add_slot")


def _running_claim_checked_as(text: str) -> dict[str, str]:
    """The statements that check the acquiring claim is RUNNING, each checking ``text``
    instead: a store whose author wrote the check one way everywhere."""
    return {name: changed(getattr(sql, name.upper()), _RUNNING_CLAIM, text) for name in _GRANTING}


class _RaceGap(SQLiteJobStore):
    """Sleeps before the write ``gapped``: the round trip between a read and the write
    that acts on it on a server store, a realistic gap, so a race shows in every run."""

    gapped = ""

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        if name == self.gapped:
            time.sleep(0.002)
        return super()._update(name, params, idempotent=idempotent)


class PermitLimitOffByOneStore(SQLiteJobStore):
    """Counts one permit too few (``held <= limit`` in a store's own words): every
    resource admits one claim more than its limit."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_slots=changed(
            sql.SELECT_PERMIT_SLOTS, "SELECT r.max_concurrent,", "SELECT r.max_concurrent + 1,"
        )
    )


class UnconfiguredAsFullPermitStore(SQLiteJobStore):
    """Answers ``False`` for a resource never configured, as if it were full: the job is
    deferred forever instead of failing with the missing configuration named."""

    def acquire_permit(self, resource: str, job_id: str, claim_seq: int, *, node_id: str) -> bool:
        try:
            return super().acquire_permit(resource, job_id, claim_seq, node_id=node_id)
        except ResourceNotConfiguredError:
            return False


class BoolLimitPermitStore(SQLiteJobStore):
    """Takes any int for a limit, ``True`` included (``bool`` is an ``int``): a
    configuration typo becomes a limit of 1."""

    def configure_resource(self, name: str, *, max_concurrent: int) -> None:
        super().configure_resource(name, max_concurrent=int(max_concurrent))


class UnfencedReleasePermitStore(SQLiteJobStore):
    """Releases a job's permit whatever claim asks: a stale worker's release takes the
    permit of the job's new owner."""

    statements = SQLiteJobStore.statements.replacing(
        free_slot=changed(sql.FREE_SLOT, " AND claim_seq = :claim_seq")
    )


class ReleaseAlwaysAnswersTrueStore(SQLiteJobStore):
    """Answers ``True`` whether or not it deleted a permit (the row count ignored)."""

    def release_permit(self, resource: str, job_id: str, claim_seq: int) -> bool:
        super().release_permit(resource, job_id, claim_seq)
        return True


class ReacquireCountsOwnPermitStore(SQLiteJobStore):
    """Never looks for the claim's own permit before taking one: a holder acquiring again
    takes a second slot, and at the limit is refused its own permit."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_slots=changed(
            sql.SELECT_PERMIT_SLOTS,
            "WHERE resource = :resource AND job_id = :id",
            "WHERE resource = :resource AND 0 AND job_id = :id",
        )
    )


class EndedPermitsCountStore(SQLiteJobStore):
    """Counts every stored permit, those of claims that ended without a release too: a
    job that failed while holding a permit holds it for ever."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_slots=changed(
            sql.SELECT_PERMIT_SLOTS,
            "AND (s.job_id IS NULL OR NOT EXISTS (",
            "AND (s.job_id IS NULL OR 0 AND NOT EXISTS (",
        )
    )


class HoldersListEndedPermitsStore(SQLiteJobStore):
    """Lists a permit whose job has the permit's ``claim_seq``, whatever its status: a
    finished job is shown holding the resource."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_holders=changed(sql.SELECT_PERMIT_HOLDERS, " AND j.status = 'RUNNING'")
    )


class HousekeepingTakesLivePermitsStore(SQLiteJobStore):
    """Housekeeping that lost its ``NOT EXISTS``: it frees every permit, so the claims
    still running lose theirs and the limit is exceeded."""

    statements = SQLiteJobStore.statements.replacing(
        select_all_ended_slots=(
            "SELECT resource, job_id, claim_seq FROM ratchet_resource_slot WHERE job_id IS NOT NULL"
        )
    )


class StaleClaimAcquiresPermitStore(SQLiteJobStore):
    """Grants any RUNNING job a permit, whatever claim asks: a worker whose claim was
    recovered holds a permit the job's new owner needs."""

    statements = SQLiteJobStore.statements.replacing(
        **_running_claim_checked_as("WHERE id = :id AND status = 'RUNNING'")
    )


class FinishedJobAcquiresPermitStore(SQLiteJobStore):
    """Grants a permit to a job of any status holding that ``claim_seq``: a claim that
    ended is granted a permit nothing will release."""

    statements = SQLiteJobStore.statements.replacing(
        **_running_claim_checked_as("WHERE id = :id AND claim_seq = :claim_seq")
    )


class EarlierClaimPermitKeptStore(SQLiteJobStore):
    """Judges a permit ended by the job's status alone: the permit of a job's released
    claim still counts once the job is claimed again, so the new claim is refused the
    permit its own earlier claim holds."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_slots=changed(sql.SELECT_PERMIT_SLOTS, " AND h.claim_seq = s.claim_seq")
    )


class NodeReleaseTakesResourcesStore(SQLiteJobStore):
    """Releases every permit of the resources a drained node held, other nodes' too."""

    statements = SQLiteJobStore.statements.replacing(
        free_node_slots=changed(
            sql.FREE_NODE_SLOTS,
            "WHERE node_id = :node_id",
            "WHERE resource IN (SELECT resource FROM ratchet_resource_slot "
            "WHERE node_id = :node_id)",
        )
    )


class LoweredLimitEvictsStore(SQLiteJobStore):
    """Lowering a limit deletes the newest permits above it, under claims still running
    the work they were granted."""

    def configure_resource(self, name: str, *, max_concurrent: int) -> None:
        super().configure_resource(name, max_concurrent=max_concurrent)
        for holder in self.permit_holders(name)[max_concurrent:]:
            self.release_permit(name, holder.job_id, holder.claim_seq)


class FirstLimitStaysStore(SQLiteJobStore):
    """Keeps the first limit a resource was configured with (the upsert's update keeps the
    stored value): raising a limit never grants more."""

    statements = SQLiteJobStore.statements.replacing(
        save_resource=changed(
            sql.SAVE_RESOURCE,
            "max_concurrent = excluded.max_concurrent",
            "max_concurrent = ratchet_resource.max_concurrent",
        )
    )


class OverwritingNewSlotStore(_RaceGap):
    """Adds a slot with an insert that overwrites one added meanwhile (``INSERT OR
    REPLACE`` for ``DO NOTHING``): acquirers that read the same next slot number are all
    granted, each holding it in its own eyes (sequential calls never see the
    difference)."""

    gapped = "add_slot"
    statements = SQLiteJobStore.statements.replacing(
        add_slot=changed(
            changed(sql.ADD_SLOT, "INSERT INTO", "INSERT OR REPLACE INTO"),
            "\nON CONFLICT (resource, slot) DO NOTHING",
        )
    )


class UnguardedSlotTakeOverStore(_RaceGap):
    """Takes a slot whose holder ended without checking it still has that holder: two
    acquirers that read the same ended slot both take it, the second overwriting the
    first's permit."""

    gapped = "take_slot"
    statements = SQLiteJobStore.statements.replacing(
        take_slot=changed(
            sql.TAKE_SLOT, "\n  AND job_id IS :old_id AND claim_seq IS :old_claim_seq"
        )
    )


class LoweredLimitOverlookedStore(SQLiteJobStore):
    """Grants a free slot below a lowered limit while claims in slots above it still
    run: the holders granted under the old limit and the new ones add up past the new
    limit."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_slots=changed(
            sql.SELECT_PERMIT_SLOTS,
            "WHERE o.resource = :resource AND o.slot >= r.max_concurrent)",
            "WHERE o.resource = :resource AND 0)",
        )
    )


class PermitHoldersByJobIdStore(SQLiteJobStore):
    """Lists holders by job id, not by when they acquired."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_holders=changed(
            sql.SELECT_PERMIT_HOLDERS, "ORDER BY s.acquired_at, s.job_id", "ORDER BY s.job_id"
        )
    )


class WholeSecondPermitTimeStore(SQLiteJobStore):
    """Stores ``acquired_at`` in whole seconds (an INTEGER column's habit): holders of one
    second tie, and every time is up to a second early."""

    statements = SQLiteJobStore.statements.replacing(
        add_slot=changed(sql.ADD_SLOT, ":node_id, :now", ":node_id, CAST(:now AS INTEGER)")
    )

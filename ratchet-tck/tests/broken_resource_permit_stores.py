"""The mutation catalogue, cluster-wide resource permits (``SupportsResourcePermits``).

Each store changes one statement (or one step) of the shared SQL layer's permits as the
embedded store runs them, the way a store author's one-line mistake would;
``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.errors import ResourceNotConfiguredError
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

_ENDED = "\n      AND j.claim_seq = ratchet_resource_permit.claim_seq"


class PermitLimitOffByOneStore(SQLiteJobStore):
    """Counts one permit too few (``held <= limit`` in a store's own words): every
    resource admits one claim more than its limit."""

    statements = SQLiteJobStore.statements.replacing(
        count_permits=changed(sql.COUNT_PERMITS, "SELECT COUNT(*)", "SELECT COUNT(*) - 1")
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
        delete_permit=changed(sql.DELETE_PERMIT, " AND claim_seq = :claim_seq")
    )


class ReleaseAlwaysAnswersTrueStore(SQLiteJobStore):
    """Answers ``True`` whether or not it deleted a permit (the row count ignored)."""

    def release_permit(self, resource: str, job_id: str, claim_seq: int) -> bool:
        super().release_permit(resource, job_id, claim_seq)
        return True


class ReacquireCountsOwnPermitStore(SQLiteJobStore):
    """Checks capacity before looking for the claim's own permit (and overwrites it): a
    holder acquiring again at the limit is refused its own permit."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_claim=changed(sql.SELECT_PERMIT_CLAIM, " AND job_id = :id", " AND 0"),
        insert_permit=changed(sql.INSERT_PERMIT, "INSERT INTO", "INSERT OR REPLACE INTO"),
    )


class EndedPermitsCountStore(SQLiteJobStore):
    """Counts every stored permit, those of claims that ended without a release too: a
    job that failed while holding a permit holds it for ever."""

    statements = SQLiteJobStore.statements.replacing(
        delete_ended_permits=changed(
            sql.DELETE_ENDED_PERMITS,
            "WHERE resource = :resource",
            "WHERE resource = :resource AND 0",
        )
    )


class HoldersListEndedPermitsStore(SQLiteJobStore):
    """Lists a permit whose job has the permit's ``claim_seq``, whatever its status: a
    finished job is shown holding the resource."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_holders=changed(sql.SELECT_PERMIT_HOLDERS, " AND j.status = 'RUNNING'")
    )


class HousekeepingTakesLivePermitsStore(SQLiteJobStore):
    """Housekeeping that lost its ``NOT EXISTS``: it deletes every permit, so the claims
    still running lose theirs and the limit is exceeded."""

    statements = SQLiteJobStore.statements.replacing(
        delete_all_ended_permits="DELETE FROM ratchet_resource_permit"
    )


class StaleClaimAcquiresPermitStore(SQLiteJobStore):
    """Grants any RUNNING job a permit, whatever claim asks: a worker whose claim was
    recovered holds a permit the job's new owner needs."""

    statements = SQLiteJobStore.statements.replacing(
        select_running_claim=changed(sql.SELECT_RUNNING_CLAIM, " AND claim_seq = :claim_seq")
    )


class FinishedJobAcquiresPermitStore(SQLiteJobStore):
    """Grants a permit to a job of any status holding that ``claim_seq``: a claim that
    ended is granted a permit nothing will release."""

    statements = SQLiteJobStore.statements.replacing(
        select_running_claim=changed(sql.SELECT_RUNNING_CLAIM, " AND status = 'RUNNING'")
    )


class EarlierClaimPermitKeptStore(SQLiteJobStore):
    """Judges a permit ended by the job's status alone: the permit of a job's recovered
    claim survives the job's next claim, whose acquire then answers ``True`` without
    holding anything."""

    statements = SQLiteJobStore.statements.replacing(
        delete_ended_permits=changed(sql.DELETE_ENDED_PERMITS, _ENDED)
    )


class NodeReleaseTakesResourcesStore(SQLiteJobStore):
    """Releases every permit of the resources a drained node held, other nodes' too."""

    statements = SQLiteJobStore.statements.replacing(
        delete_node_permits=changed(
            sql.DELETE_NODE_PERMITS,
            "WHERE node_id = :node_id",
            "WHERE resource IN (SELECT resource FROM ratchet_resource_permit "
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


class CheckThenInsertPermitStore(SQLiteJobStore):
    """Counts the holders with a read, then inserts in another transaction without
    counting again: acquirers racing past the same read are all granted (sequential calls
    never see the difference)."""

    statements = SQLiteJobStore.statements.replacing(count_permits="SELECT 0")

    def acquire_permit(self, resource: str, job_id: str, claim_seq: int, *, node_id: str) -> bool:
        limit = self.resource_limit(resource)
        holders = [(h.job_id, h.claim_seq) for h in self.permit_holders(resource)]
        if limit is not None and (job_id, claim_seq) not in holders and len(holders) >= limit:
            return False
        # The round trip between the read and the write on a server store; a realistic
        # gap, so the race shows in every run.
        time.sleep(0.002)
        return super().acquire_permit(resource, job_id, claim_seq, node_id=node_id)


class PermitHoldersByJobIdStore(SQLiteJobStore):
    """Lists holders by job id, not by when they acquired."""

    statements = SQLiteJobStore.statements.replacing(
        select_permit_holders=changed(
            sql.SELECT_PERMIT_HOLDERS, "ORDER BY p.acquired_at, p.job_id", "ORDER BY p.job_id"
        )
    )


class WholeSecondPermitTimeStore(SQLiteJobStore):
    """Stores ``acquired_at`` in whole seconds (an INTEGER column's habit): holders of one
    second tie, and every time is up to a second early."""

    statements = SQLiteJobStore.statements.replacing(
        insert_permit=changed(sql.INSERT_PERMIT, ":now)", "CAST(:now AS INTEGER))")
    )

"""The mutation catalogue, chains (``SupportsChains``).

Each store changes one statement (or one step) of the embedded store's chains (the stored
status of a step, the release a success runs, the cancel of the steps after a failure, the
settling scan), the way a store author's one-line mistake would; ``test_kit_can_fail.py``
names the contract test that must catch it.
"""

from __future__ import annotations

from collections.abc import Sequence

from broken_queue_stores import changed

from ratchet.spi import Completion, NewJob
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class StepStoredPendingStore(SQLiteJobStore):
    """Keeps the link but stores every job PENDING: a chain's later steps run at once."""

    def _insert_rows(self, session: object, job: NewJob) -> None:
        super()._insert_rows(session, job)  # type: ignore[arg-type]
        if job.depends_on is not None:
            session.execute_text(  # type: ignore[attr-defined]
                "UPDATE ratchet_job SET status = 'PENDING' WHERE id = :id", {"id": job.id}
            )


class SuccessReleasesNothingStore(SQLiteJobStore):
    """Forgets the release: a success leaves the next step WAITING."""

    statements = SQLiteJobStore.statements.replacing(
        release_dependents=changed(sql.RELEASE_DEPENDENTS, "status = 'WAITING'", "0 = 1")
    )


class ReleaseKeepsItsTimeStore(SQLiteJobStore):
    """Releases the next step without making it due now (it keeps its enqueue time)."""

    statements = SQLiteJobStore.statements.replacing(
        release_dependents=changed(sql.RELEASE_DEPENDENTS, "scheduled_at = :now, ", "")
    )


class StaleCompletionReleasesStore(SQLiteJobStore):
    """Releases the next step before the fenced completion, whether or not it matched."""

    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        self._update("release_dependents", {"id": job_id})
        return super().complete_job(
            job_id, claim_seq, result_json=result_json, result_type=result_type
        )


class BatchReleasesNothingStore(SQLiteJobStore):
    """Runs the batch completion without the release (the single completion keeps it)."""

    def _complete_many(self, completions: Sequence[Completion]) -> set[str]:
        # The batch runs with a release that matches nothing; the class keeps the real one.
        self.statements = type(self).statements.replacing(
            release_dependents=sql.RELEASE_DEPENDENTS.rstrip().rstrip(";") + " AND 0 = 1;"
        )
        try:
            return super()._complete_many(completions)
        finally:
            del self.statements


class CancelOneLevelStore(SQLiteJobStore):
    """Cancels the failed step's direct dependents only, not the rest of the chain."""

    def cancel_dependents(self, job_id: str) -> list[str]:
        rows = self._query("select_dependents", {"id": job_id})
        ids = [row[0] for row in rows if row[5] == "WAITING"]
        self._transaction(
            lambda session: session.execute_in("cancel_waiting", ids, {"message": "x"})
        )
        return ids


class CancelUnguardedStore(SQLiteJobStore):
    """Cancels the dependents in any status (the WAITING guard dropped from both reads)."""

    statements = SQLiteJobStore.statements.replacing(
        select_waiting_dependents=changed(sql.SELECT_WAITING_DEPENDENTS, " AND status = 'WAITING'"),
        cancel_waiting=changed(sql.CANCEL_WAITING, " AND status = 'WAITING'"),
    )


class SettleCancelsEverythingStore(SQLiteJobStore):
    """Settles every ended predecessor's step as a failure: a crash after a success
    cancels the next step instead of releasing it."""

    statements = SQLiteJobStore.statements.replacing(
        select_settleable=changed(sql.SELECT_SETTLEABLE, "COALESCE(p.status, a.status)", "'FAILED'")
    )


class SettleBehindActiveStore(SQLiteJobStore):
    """Settles the steps behind still active predecessors too (the ended filter dropped)."""

    statements = SQLiteJobStore.statements.replacing(
        select_settleable=changed(
            sql.SELECT_SETTLEABLE,
            "AND (p.id IS NULL OR p.status IN ('SUCCEEDED', 'FAILED', 'CANCELED'))",
        )
    )


class SettleUnguardedStore(SQLiteJobStore):
    """Settles with the WAITING guard dropped from the release and the cancel: settlers
    racing over the same steps each count them."""

    statements = SQLiteJobStore.statements.replacing(
        release_waiting=changed(sql.RELEASE_WAITING, " AND status = 'WAITING'"),
        cancel_waiting=changed(sql.CANCEL_WAITING, " AND status = 'WAITING'"),
    )

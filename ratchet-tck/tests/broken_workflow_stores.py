"""The mutation catalogue, workflows (``SupportsWorkflows``).

Each store changes one statement (or one step) of the embedded store's workflows (the
success's release, the settling scan, the resolution, the cancel of one branch, the
recovery scan), the way a store author's one-line mistake would; ``test_kit_can_fail.py``
names the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.spi import JobStatus, NewJob
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class SuccessReleasesBranchesStore(SQLiteJobStore):
    """Releases every dependent on success, branches too: they all run."""

    statements = SQLiteJobStore.statements.replacing(
        release_dependents=changed(sql.RELEASE_DEPENDENTS, " AND branch_json IS NULL")
    )


class BranchConditionDroppedStore(SQLiteJobStore):
    """Stores a branch as a plain chain step (its condition lost)."""

    def _insert_rows(self, session: object, job: NewJob) -> None:
        super()._insert_rows(session, job)  # type: ignore[arg-type]
        if job.branch is not None:
            session.execute_text(  # type: ignore[attr-defined]
                "UPDATE ratchet_job SET branch_json = NULL WHERE id = :id", {"id": job.id}
            )


class ResolutionUnguardedStore(SQLiteJobStore):
    """Resolves whatever the branches' status: a second resolution undoes the first."""

    statements = SQLiteJobStore.statements.replacing(
        resolve_branches=changed(sql.RESOLVE_BRANCHES, " AND status = 'WAITING'")
    )


class ResolutionKeepsDeadlineStore(SQLiteJobStore):
    """Releases the winner without making it due now."""

    statements = SQLiteJobStore.statements.replacing(
        resolve_branches=changed(
            sql.RESOLVE_BRANCHES,
            "scheduled_at = CASE WHEN id = :winner THEN :now ELSE scheduled_at END,",
            "",
        )
    )


class NullWinnerReleasesStore(SQLiteJobStore):
    """Reads a missing winner as "any": a resolution with no winner releases them all."""

    statements = SQLiteJobStore.statements.replacing(
        resolve_branches=changed(
            sql.RESOLVE_BRANCHES,
            "WHEN id = :winner THEN",
            "WHEN :winner IS NULL OR id = :winner THEN",
        )
    )


class CancelBranchAnyStepStore(SQLiteJobStore):
    """Cancels any WAITING job through cancel_branch, a plain chain step too."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_branch=changed(sql.CANCEL_BRANCH, " AND branch_json IS NOT NULL")
    )


class SettleTakesBranchesStore(SQLiteJobStore):
    """Settles branches like chain steps: released behind a success before resolution."""

    statements = SQLiteJobStore.statements.replacing(
        select_settleable=changed(sql.SELECT_SETTLEABLE, " AND w.branch_json IS NULL")
    )


class BranchParentsStillRunningStore(SQLiteJobStore):
    """Lists every parent with waiting branches, those still to run too."""

    statements = SQLiteJobStore.statements.replacing(
        select_branch_parents=changed(
            sql.SELECT_BRANCH_PARENTS,
            "\n  AND (p.id IS NULL OR p.status IN ('SUCCEEDED', 'FAILED', 'CANCELED'))",
        )
    )


class ResolutionReadThenWriteStore(SQLiteJobStore):
    """Reads the waiting branches, then writes each by id unguarded: two racing
    resolutions both release a branch."""

    def resolve_branches(self, parent_id: str, *, winner: str | None, message: str) -> int:
        waiting = [
            job
            for job in self.dependents(parent_id)
            if job.branch is not None and job.status is JobStatus.WAITING
        ]
        time.sleep(0.01)  # the window a slow network gives any read-then-write
        with self._write() as (conn, now):
            for job in waiting:
                if job.id == winner:
                    conn.execute(
                        "UPDATE ratchet_job SET status = 'PENDING', scheduled_at = :now "
                        "WHERE id = :id",
                        {"id": job.id, "now": now},
                    )
                else:
                    conn.execute(
                        "UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, "
                        "last_error = :message WHERE id = :id",
                        {"id": job.id, "now": now, "message": message},
                    )
        return len(waiting)

"""The mutation catalogue, canceling running jobs (``SupportsRunningCancel``).

Each store changes one statement (or one step) of the embedded store's
``cancel_running_job`` or ``canceled_among``, the way a store author's one-line mistake
would; ``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from broken_queue_stores import changed

from ratchet.spi import JobStatus, NewJob, business_key_held
from ratchet.spi.sql import SQLSession
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

_FENCE = " AND status = 'RUNNING' AND claim_seq = :claim_seq"


class UnfencedRunningCancelStore(SQLiteJobStore):
    """Cancels by status alone: a cancel aimed at a claim that was recovered meanwhile
    cancels the new owner's run."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_running_job=changed(sql.CANCEL_RUNNING_JOB, " AND claim_seq = :claim_seq")
    )


class RunningCancelKeepsRunningStore(SQLiteJobStore):
    """Leaves the status alone (answering ``True``): the canceled claim's worker still
    records its outcome, and the job is never CANCELED."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_running_job=changed(
            sql.CANCEL_RUNNING_JOB, "SET status = 'CANCELED',", "SET status = status,"
        )
    )


class OutcomeOverridesRunningCancelStore(SQLiteJobStore):
    """Completes a canceled claim too (``status IN ('RUNNING', 'CANCELED')``): a worker
    finishing after the cancel turns the job SUCCEEDED again."""

    statements = SQLiteJobStore.statements.replacing(
        complete_job=changed(
            sql.COMPLETE_JOB, "status = 'RUNNING'", "status IN ('RUNNING', 'CANCELED')"
        )
    )


class RunningCancelLeavesExecutionOpenStore(SQLiteJobStore):
    """Writes the job's row only: the canceled claim's execution record stays RUNNING,
    until a stale-record sweep closes it with the wrong message."""

    def cancel_running_job(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        return self._update("cancel_running_job", {"id": job_id, "claim_seq": claim_seq}) == 1


class RunningCancelKeepsKeyStore(SQLiteJobStore):
    """A job canceled while it ran still holds its business key, as in a store that keeps
    key reservations until an outcome frees them and whose running cancel forgot to: the
    key's work can never be enqueued again. (The embedded store's partial index frees the
    key by itself, so the mistake is made where the enqueue looks for the holder.)"""

    def _insert_rows(self, session: SQLSession, job: NewJob) -> None:
        if job.business_key is not None:
            holder = session.query_text(
                "SELECT id FROM ratchet_job WHERE business_key = :key "
                "AND status = 'CANCELED' AND claim_seq > 0",
                {"key": job.business_key},
            )
            if holder:
                raise business_key_held(job.business_key, holder[0][0])
        super()._insert_rows(session, job)


class CheckThenWriteRunningCancelStore(SQLiteJobStore):
    """Checks the claim with a read, then cancels by id in another transaction: an outcome
    or another cancel landing in between is overwritten and both answer ``True``
    (sequential calls never see the difference)."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_running_job=changed(sql.CANCEL_RUNNING_JOB, _FENCE)
    )

    def cancel_running_job(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        job = self.get_job(job_id)
        if job is None or job.status is not JobStatus.RUNNING or job.claim_seq != claim_seq:
            return False
        # The round trip between the read and the write on a server store; a realistic
        # gap, so the race shows in every run.
        time.sleep(0.002)
        return super().cancel_running_job(job_id, claim_seq, message=message)


class CanceledAmongEchoesIdsStore(SQLiteJobStore):
    """Answers every id it is asked about: every running job is told to stop."""

    def canceled_among(self, job_ids: Sequence[str]) -> frozenset[str]:
        return frozenset(job_ids)


class CanceledAmongAnyStatusStore(SQLiteJobStore):
    """Leaves the status out of the read: every known job counts as canceled."""

    statements = SQLiteJobStore.statements.replacing(
        select_canceled=changed(sql.SELECT_CANCELED, " AND status = 'CANCELED'")
    )


class CanceledAmongFirstThousandStore(SQLiteJobStore):
    """Reads only the first 1000 ids (one IN list, cut to a database's limit): a node
    running more jobs never learns that the later ones were canceled."""

    def canceled_among(self, job_ids: Sequence[str]) -> frozenset[str]:
        return super().canceled_among(list(job_ids)[:1000])

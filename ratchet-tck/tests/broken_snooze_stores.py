"""The mutation catalogue, snoozing (``SupportsSnooze``).

Each store changes one statement (or one argument) of the embedded store's
``snooze_job``, the way a store author's one-line mistake would; ``test_kit_can_fail.py``
names the contract test that must catch it.
"""

from __future__ import annotations

from broken_queue_stores import changed

from ratchet.spi import ExecutionStatus
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class UnfencedSnoozeStore(SQLiteJobStore):
    """Snoozes by status alone: a worker that lost its claim pushes the new owner's run
    into the future."""

    statements = SQLiteJobStore.statements.replacing(
        snooze_job=changed(sql.SNOOZE_JOB, " AND claim_seq = :claim_seq")
    )


class SnoozeCountsAttemptStore(SQLiteJobStore):
    """Charges the snooze like a retry (``attempts + 1``): snoozing eats ``max_retries``."""

    statements = SQLiteJobStore.statements.replacing(
        snooze_job=changed(
            sql.SNOOZE_JOB,
            "SET status = 'PENDING',",
            "SET status = 'PENDING', attempts = attempts + 1,",
        )
    )


class SnoozeClearsErrorStore(SQLiteJobStore):
    """Clears ``last_error`` like a manual retry: the error of the last failed attempt is lost."""

    statements = SQLiteJobStore.statements.replacing(
        snooze_job=changed(
            sql.SNOOZE_JOB, "SET status = 'PENDING',", "SET status = 'PENDING', last_error = NULL,"
        )
    )


class SnoozeIgnoresDelayStore(SQLiteJobStore):
    """Leaves the delay out: the snoozed job is due at once, as a released claim is."""

    statements = SQLiteJobStore.statements.replacing(
        snooze_job=changed(sql.SNOOZE_JOB, "scheduled_at = :now + :delay", "scheduled_at = :now")
    )


class SnoozeClosesFailedStore(SQLiteJobStore):
    """Closes the snoozed claim's execution record as FAILED, as a retry does: a snooze
    reads as a failure in the job's history."""

    def snooze_job(
        self, job_id: str, claim_seq: int, *, delay_seconds: float, message: str
    ) -> bool:
        return self._fenced_outcome(
            "snooze_job",
            {"id": job_id, "claim_seq": claim_seq, "delay": self.encode.duration(delay_seconds)},
            status=ExecutionStatus.FAILED,
            message=self.encode.message(message),
        )

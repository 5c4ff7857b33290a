"""The mutation catalogue, pausing single jobs (``SupportsJobPause``).

Each store changes one statement (or one step) of the embedded store's ``pause_job``,
``resume_job`` or the cancels that must take a PAUSED job, the way a store author's
one-line mistake would; ``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.spi import JobStatus
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class PauseAnyStatusStore(SQLiteJobStore):
    """Leaves out the status guard: a RUNNING or finished job can be paused."""

    statements = SQLiteJobStore.statements.replacing(
        pause_job=changed(sql.PAUSE_JOB, " AND status = 'PENDING'")
    )


class PausedStaysPendingStore(SQLiteJobStore):
    """Writes the wrong status: the "paused" job stays PENDING and is claimed."""

    statements = SQLiteJobStore.statements.replacing(
        pause_job=changed(sql.PAUSE_JOB, "SET status = 'PAUSED'", "SET status = 'PENDING'")
    )


class ResumeReschedulesStore(SQLiteJobStore):
    """Makes a resumed job due now, losing its place in claim order."""

    statements = SQLiteJobStore.statements.replacing(
        resume_job=changed(
            sql.RESUME_JOB,
            "SET status = 'PENDING',",
            "SET status = 'PENDING', scheduled_at = :now,",
        )
    )


class PauseDropsBusinessKeyStore(SQLiteJobStore):
    """Clears the business key of the job it pauses, so the key is free while it waits."""

    statements = SQLiteJobStore.statements.replacing(
        pause_job=changed(
            sql.PAUSE_JOB, "SET status = 'PAUSED',", "SET status = 'PAUSED', business_key = NULL,"
        )
    )


class CancelSkipsPausedStore(SQLiteJobStore):
    """Cancels PENDING jobs only: a PAUSED job cannot be canceled."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_job=changed(
            sql.CANCEL_JOB,
            "status IN ('PENDING', 'PAUSED', 'WAITING')",
            "status IN ('PENDING', 'WAITING')",
        )
    )


class CancelByTagSkipsPausedStore(SQLiteJobStore):
    """Cancels by tag the PENDING jobs only: a PAUSED job with the tag survives."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_by_tag=changed(
            sql.CANCEL_BY_TAG,
            "status IN ('PENDING', 'PAUSED', 'WAITING')",
            "status IN ('PENDING', 'WAITING')",
        )
    )


class PauseReadThenWriteStore(SQLiteJobStore):
    """Reads the status, then writes PAUSED unguarded: a claim in between is overwritten."""

    def pause_job(self, job_id: str) -> bool:
        job = self.get_job(job_id)
        if job is None or job.status is not JobStatus.PENDING:
            return False
        time.sleep(0.01)  # the window a slow network gives any read-then-write
        with self._write() as (conn, now):
            conn.execute(
                "UPDATE ratchet_job SET status = 'PAUSED', updated_at = :now WHERE id = :id",
                {"id": job_id, "now": now},
            )
        return True

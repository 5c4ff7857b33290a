"""The mutation catalogue, mutation-testing half: one broken store per mutant of the
SQLite store that survived the whole kit until a contract was added for it (see
ratchet-tck/MUTATION.md, which names each mutant).

Each store changes one behaviour of the embedded store the way the mutant did;
``test_kit_can_fail.py`` names the contract test (in ``ratchet_tck.store.details``) that
must catch it.
"""

from __future__ import annotations

import sqlite3

from broken_queue_stores import changed, for_one

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import Job, JobStatus, NewJob, OrphanRecovery
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class KeylessConflictErrorStore(SQLiteJobStore):
    """Enqueue conflicts raise the right error with the holder but without the key
    (mutmut ``_insert__mutmut_8`` and ``_80``: ``key=None``)."""

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        try:
            super()._insert(conn, now, job)
        except (DuplicateIdempotencyKeyError, BusinessKeyConflictError) as exc:
            raise type(exc)(str(exc), key="", existing_job_id=exc.existing_job_id) from exc


class RetryConflictWithoutHolderStore(SQLiteJobStore):
    """A refused retry raises BusinessKeyConflictError naming no holder (mutmut
    ``retry_failed_job__mutmut_22``: ``holder = None``)."""

    def retry_failed_job(self, job_id: str) -> bool:
        try:
            return super().retry_failed_job(job_id)
        except BusinessKeyConflictError as exc:
            raise BusinessKeyConflictError(str(exc), key=exc.key, existing_job_id=None) from exc


class LateFailureAsSuccessStore(SQLiteJobStore):
    """Records every late outcome as SUCCEEDED (mutmut ``record_late_outcome__mutmut_3``:
    ``SUCCEEDED if succeeded or True``)."""

    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        return super().record_late_outcome(job_id, claim_seq, succeeded=True, message=message)


class DisownsBySequenceStore(SQLiteJobStore):
    """Clears the owner of every RUNNING job under the exhausted claim's sequence, not of
    that job only (``sql.DISOWN_EXHAUSTED.1``: ``id = :id OR status = 'RUNNING' AND ...``)."""

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        recovery = super().recover_node_claims(
            node_id, max_crash_redeliveries=max_crash_redeliveries, limit=limit
        )
        disown = changed(sql.DISOWN_EXHAUSTED, "WHERE id = :id AND", "WHERE id = :id OR")
        with self._write() as (conn, now):
            for job_id, claim_seq in recovery.exhausted:
                conn.execute(disown, {"id": job_id, "claim_seq": claim_seq, "now": now})
        return recovery


class ClosesClosedRecordsStore(SQLiteJobStore):
    """``close_stale_executions`` rewrites any record whose job moved on, closed ones
    included (``sql.CLOSE_STALE_EXECUTIONS.2``: the ``e.status = 'RUNNING'`` guard lost)."""

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        statement = changed(sql.CLOSE_STALE_EXECUTIONS, "e.status = 'RUNNING'\n      AND ")
        with self._write() as (conn, now):
            params = {"now": now, "grace": grace_seconds, "message": message, "limit": limit}
            return int(conn.execute(statement, params).rowcount)


class DeletesOtherJobsTagsStore(SQLiteJobStore):
    """Archiving a job deletes every other job's tags and keeps its own
    (``sql.DELETE_TAGS.0``: ``WHERE job_id <> :id``)."""

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        delete_tags = changed(sql.DELETE_TAGS, "job_id IN ({ids})", "job_id <> :id")
        with self._write() as (conn, now):
            ids = conn.execute(
                sql.SELECT_ARCHIVABLE, {"now": now, "age": older_than_seconds, "limit": batch_size}
            ).fetchall()
            for (job_id,) in ids:
                conn.execute(for_one(sql.ARCHIVE_JOBS), {"id": job_id, "now": now})
                conn.execute(delete_tags, {"id": job_id})
                conn.execute(for_one(sql.DELETE_JOBS), {"id": job_id})
            return len(ids)


class LargerDefaultListStore(SQLiteJobStore):
    """``list_jobs()`` defaults to 1000 jobs instead of the SPI's 100 (mutmut
    ``list_jobs__mutmut_1``: ``limit: int = 101``)."""

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 1000
    ) -> list[Job]:
        return super().list_jobs(status=status, tag=tag, limit=limit)


class ResetKeepsKeysStore(SQLiteJobStore):
    """``reset_for_tests`` forgets the idempotency key table (mutmut
    ``reset_for_tests__mutmut_1`` broke the reset outright; this is the quieter bug)."""

    TABLES = (  # the store's tables, but for ratchet_idempotency_key
        "ratchet_recurring",
        "ratchet_job",
        "ratchet_job_tag",
        "ratchet_execution",
        "ratchet_node",
        "ratchet_lock",
        "ratchet_recurring_fire",
        "ratchet_job_archive",
    )

    def reset_for_tests(self) -> None:
        with self._write() as (conn, _now):
            for table in self.TABLES:
                conn.execute(f"DELETE FROM {table}")

"""The mutation catalogue, archive reads and batched purges (``SupportsArchiveAccess``).

Each store changes one statement of the embedded store's archive access, the way a store
author's one-line mistake would; ``test_kit_can_fail.py`` names the contract test that
must catch it.
"""

from __future__ import annotations

from broken_queue_stores import changed

from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class LiveTableArchiveReadStore(SQLiteJobStore):
    """Reads an "archived" job from the live table: archived jobs are never found, live
    ones are."""

    statements = SQLiteJobStore.statements.replacing(
        select_archived_job=changed(
            sql.SELECT_ARCHIVED_JOB, "FROM ratchet_job_archive", "FROM ratchet_job"
        )
    )


class OldestFirstArchiveListStore(SQLiteJobStore):
    """Lists the archive oldest first."""

    statements = SQLiteJobStore.statements.replacing(
        list_archived_jobs=changed(
            sql.LIST_ARCHIVED_JOBS, "ORDER BY created_at DESC, id DESC", "ORDER BY created_at, id"
        )
    )


class TagPrefixArchiveListStore(SQLiteJobStore):
    """Matches archived tags by prefix: the tag ``x`` also lists jobs tagged ``xx``."""

    statements = SQLiteJobStore.statements.replacing(
        list_archived_jobs=changed(
            sql.LIST_ARCHIVED_JOBS, "t.value = :tag", "t.value LIKE :tag || '%'"
        )
    )


class IgnoresStatusArchiveListStore(SQLiteJobStore):
    """Drops the status filter of the archive list."""

    statements = SQLiteJobStore.statements.replacing(
        list_archived_jobs=changed(
            sql.LIST_ARCHIVED_JOBS, "(:status IS NULL OR status = :status)", "1"
        )
    )


class IgnoresCutOffArchivePurgeStore(SQLiteJobStore):
    """Purges archived jobs of any age."""

    statements = SQLiteJobStore.statements.replacing(
        purge_archived_jobs=changed(sql.PURGE_ARCHIVED_JOBS, "finished_at < :now - :age", "1")
    )


class NewestFirstArchivePurgeStore(SQLiteJobStore):
    """Purges the most recently finished archived jobs first."""

    statements = SQLiteJobStore.statements.replacing(
        purge_archived_jobs=changed(
            sql.PURGE_ARCHIVED_JOBS,
            "ORDER BY finished_at, id LIMIT",
            "ORDER BY finished_at DESC, id LIMIT",
        )
    )


class PurgesLiveJobsArchivePurgeStore(SQLiteJobStore):
    """Purges from the live table as well as the archive: old finished live jobs go."""

    def purge_archived_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        purged = super().purge_archived_jobs(
            older_than_seconds=older_than_seconds, batch_size=batch_size
        )
        return purged + self.purge_failed_jobs(older_than_seconds=older_than_seconds)


class AnyStatusDeadLetterPurgeStore(SQLiteJobStore):
    """Selects finished jobs of every status as dead letters."""

    statements = SQLiteJobStore.statements.replacing(
        select_dead_letters=changed(
            sql.SELECT_DEAD_LETTERS, "status = 'FAILED' AND finished_at", "finished_at"
        )
    )


class UnboundedDeadLetterPurgeStore(SQLiteJobStore):
    """Ignores the batch size: every old dead letter goes in one call."""

    statements = SQLiteJobStore.statements.replacing(
        select_dead_letters=changed(sql.SELECT_DEAD_LETTERS, "LIMIT :limit", "LIMIT -1")
    )


class IgnoresCutOffDeadLetterPurgeStore(SQLiteJobStore):
    """Purges dead letters of any age."""

    statements = SQLiteJobStore.statements.replacing(
        select_dead_letters=changed(sql.SELECT_DEAD_LETTERS, "AND finished_at < :now - :age", "")
    )


class DropsKeysArchivePurgeStore(SQLiteJobStore):
    """Deletes the purged jobs' idempotency keys with them: a purged job's key can be
    enqueued again."""

    def purge_archived_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        with self._write() as (conn, _now):
            conn.execute(
                "DELETE FROM ratchet_idempotency_key"
                " WHERE job_id IN (SELECT id FROM ratchet_job_archive)"
            )
        return super().purge_archived_jobs(
            older_than_seconds=older_than_seconds, batch_size=batch_size
        )

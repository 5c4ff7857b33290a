"""The mutation catalogue, bulk dead-letter retry (``SupportsBulkRetry``).

Each store changes one statement (or, for the race, one step) of the embedded store's
bulk retry, the way a store author's one-line mistake would; ``test_kit_can_fail.py``
names the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class BulkRetryAnyStatusStore(SQLiteJobStore):
    """Selects candidates of every status: jobs that are not dead letters take places of
    the batch (the update's own guard still refuses them)."""

    statements = SQLiteJobStore.statements.replacing(
        select_retryable_failed=changed(sql.SELECT_RETRYABLE_FAILED, "j.status = 'FAILED'", "1")
    )


class NewestFailureFirstBulkRetryStore(SQLiteJobStore):
    """Takes the newest failures first: a limited batch retries the wrong jobs."""

    statements = SQLiteJobStore.statements.replacing(
        select_retryable_failed=changed(
            sql.SELECT_RETRYABLE_FAILED,
            "ORDER BY j.finished_at, j.id",
            "ORDER BY j.finished_at DESC",
        )
    )


class IgnoresNameBulkRetryStore(SQLiteJobStore):
    """Drops the name filter: every dead letter of the tag is retried."""

    statements = SQLiteJobStore.statements.replacing(
        select_retryable_failed=changed(
            sql.SELECT_RETRYABLE_FAILED, "(:name IS NULL OR j.name = :name)", "1"
        )
    )


class TagPrefixBulkRetryStore(SQLiteJobStore):
    """Matches tags by prefix: the tag ``x`` also retries jobs tagged ``xx``."""

    statements = SQLiteJobStore.statements.replacing(
        select_retryable_failed=changed(
            sql.SELECT_RETRYABLE_FAILED, "WHERE tag = :tag", "WHERE tag LIKE :tag || '%'"
        )
    )


class RetriesHeldKeyBulkRetryStore(SQLiteJobStore):
    """Does not leave out jobs whose business key an active job holds: the update's
    unique violation fails the whole batch."""

    statements = SQLiteJobStore.statements.replacing(
        select_retryable_failed=changed(
            sql.SELECT_RETRYABLE_FAILED, "OR NOT EXISTS", "OR 1 OR NOT EXISTS"
        )
    )


class DoubleBulkRetryStore(SQLiteJobStore):
    """Reads the batch outside the retrying transaction and counts every update, matched
    or not: two callers racing both return the same jobs."""

    def retry_failed_jobs(self, *, name: str | None, tag: str | None, limit: int) -> list[str]:
        params = {"name": name, "tag": tag, "limit": int(limit)}
        ids = [str(row[0]) for row in self._query("select_retryable_failed", params)]
        time.sleep(0.005)  # widen the window a real race would find
        with self._write() as (conn, now):
            for job_id in ids:
                conn.execute(self.statements["retry_failed_job"], {"id": job_id, "now": now})
        return ids

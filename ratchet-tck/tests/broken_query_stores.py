"""The mutation catalogue, job queries (``SupportsJobQuery``).

Each store changes one statement (or one step) of the embedded store's job queries, the
way a store author's one-line mistake would; ``test_kit_can_fail.py`` names the contract
test that must catch it.
"""

from __future__ import annotations

import dataclasses

from broken_queue_stores import changed

from ratchet.spi import JobCursor, JobPage, JobQuery
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

_CURSOR = "created_at < :after_next AND (created_at < :after_at OR id < :after_id)"


class QueryIdAscendingStore(SQLiteJobStore):
    """Breaks ties on ``created_at`` by id ascending: jobs enqueued together come out
    in the wrong order."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs=changed(
            sql.QUERY_JOBS, "ORDER BY created_at DESC, id DESC", "ORDER BY created_at DESC, id"
        )
    )


class QueryCursorIgnoresIdStore(SQLiteJobStore):
    """Continues at or before the cursor's time, whatever the id: every job of the
    cursor's time is listed again on the next page."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs=changed(sql.QUERY_JOBS, _CURSOR, "created_at < :after_next")
    )


class QueryCursorSkipsTiesStore(SQLiteJobStore):
    """Continues strictly before the cursor's time: the jobs that share it but were not
    on the page are never listed."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs=changed(sql.QUERY_JOBS, _CURSOR, "created_at < :after_at")
    )


class QueryStatusIgnoredUnderNameStore(SQLiteJobStore):
    """Drops the status check from the statement a name drives: a name and statuses
    together list the name's jobs of every status."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs_by_name=changed(
            sql.QUERY_JOBS_BY_NAME,
            " AND +status IN (:status_0, :status_1, :status_2, :status_3, :status_4, :status_5,"
            " :status_6)",
        )
    )


class QueryStatusBranchWithoutCursorStore(SQLiteJobStore):
    """Leaves the cursor out of the FAILED branch of a status query: the newest FAILED
    jobs come back on every page."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs_by_status=changed(
            sql.QUERY_JOBS_BY_STATUS,
            f"status = 'FAILED' AND :want_failed = 1 AND created_at >= :created_from "
            f"AND created_at < :created_to AND {_CURSOR}",
            "status = 'FAILED' AND :want_failed = 1 AND created_at >= :created_from "
            "AND created_at < :created_to",
        )
    )


class QueryNamePrefixStore(SQLiteJobStore):
    """Matches the name as a prefix (LIKE): ``tck.q.a`` also lists ``tck.q.ab``."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs_by_name=changed(
            sql.QUERY_JOBS_BY_NAME, "name = :name", "name LIKE :name || '%'"
        ).replace("OR name = :name", "OR name LIKE :name || '%'")
    )


class QueryTagPrefixStore(SQLiteJobStore):
    """Matches tags as prefixes: ``x`` also lists jobs tagged ``xx``."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs_by_tag=changed(
            sql.QUERY_JOBS_BY_TAG, "tag = :tag", "tag LIKE :tag || '%'"
        ).replace("WHERE tag = :tag", "WHERE tag LIKE :tag || '%'")
    )


class QueryNameIgnoredUnderBusinessKeyStore(SQLiteJobStore):
    """Drops the name check from the statement a business key drives: a name and a key
    together list every job of the key."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs_by_business_key=changed(
            sql.QUERY_JOBS_BY_BUSINESS_KEY, "(:name IS NULL OR name = :name)", "1"
        )
    )


class QueryBusinessKeyActiveOnlyStore(SQLiteJobStore):
    """Finds a business key among the active jobs only (as the key reservation does):
    the finished jobs that carried it are not listed."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs_by_business_key=changed(
            sql.QUERY_JOBS_BY_BUSINESS_KEY,
            "WHERE business_key = :business_key",
            "WHERE business_key = :business_key AND status IN ('PENDING', 'RUNNING')",
        )
    )


class QueryOffsetPagingStore(SQLiteJobStore):
    """Pages by offset (its cursor carries how many jobs came before): a job enqueued
    while the pages are read shifts every later page."""

    def query_jobs(self, query: JobQuery) -> JobPage:
        skip = 0 if query.after is None else int(query.after.id.rsplit("#", 1)[1])
        every = super().query_jobs(dataclasses.replace(query, after=None, limit=1000)).jobs
        jobs = every[skip : skip + query.limit]
        if len(jobs) < query.limit:
            return JobPage(jobs=jobs, next=None)
        cursor = JobCursor(created_at=jobs[-1].created_at, id=f"{jobs[-1].id}#{skip + len(jobs)}")
        return JobPage(jobs=jobs, next=cursor)


class QueryCreatedToInclusiveStore(SQLiteJobStore):
    """Keeps jobs created exactly at ``created_to`` (an inclusive upper bound)."""

    statements = SQLiteJobStore.statements.replacing(
        query_jobs=changed(
            sql.QUERY_JOBS, "created_at < :created_to", "created_at < :created_to + 0.001"
        )
    )


class QueryIdempotencyKeyIgnoredStore(SQLiteJobStore):
    """Ignores ``idempotency_key``: the listing holds every job."""

    def query_jobs(self, query: JobQuery) -> JobPage:
        return super().query_jobs(dataclasses.replace(query, idempotency_key=None))


class QueryCursorOnShortPageStore(SQLiteJobStore):
    """Hands out a cursor on a short page too: the listing seems to go on."""

    def query_jobs(self, query: JobQuery) -> JobPage:
        page = super().query_jobs(query)
        if page.next is None and page.jobs:
            last = page.jobs[-1]
            return JobPage(jobs=page.jobs, next=JobCursor(created_at=last.created_at, id=last.id))
        return page


class QueryLimitClampedStore(SQLiteJobStore):
    """Clamps an out-of-range limit instead of refusing it."""

    def query_jobs(self, query: JobQuery) -> JobPage:
        return super().query_jobs(dataclasses.replace(query, limit=min(max(query.limit, 1), 1000)))


class DeadLetterGroupsWholeLineStore(SQLiteJobStore):
    """Groups dead letters by the whole first line of the error: ``ValueError: boom``
    and ``ValueError: other`` become two groups."""

    statements = SQLiteJobStore.statements.replacing(
        dead_letter_groups=changed(
            sql.DEAD_LETTER_GROUPS,
            "substr(line || ':', 1, instr(line || ':', ':') - 1) AS error_type",
            "line AS error_type",
        )
    )


class DeadLetterGroupsAnyStatusStore(SQLiteJobStore):
    """Groups every job with an error, not only the FAILED: a job retried and pending
    again, or canceled, counts as a dead letter."""

    statements = SQLiteJobStore.statements.replacing(
        dead_letter_groups=changed(
            sql.DEAD_LETTER_GROUPS, "WHERE status = 'FAILED'", "WHERE status <> 'RUNNING'"
        )
    )


class ExecutionCountsReleasedAsFailedStore(SQLiteJobStore):
    """Counts every record that did not succeed as failed (RELEASED included)."""

    statements = SQLiteJobStore.statements.replacing(
        execution_counts=changed(
            sql.EXECUTION_COUNTS, "SUM(status = 'FAILED')", "SUM(status <> 'SUCCEEDED')"
        )
    )


class ExecutionBucketsUnalignedStore(SQLiteJobStore):
    """Starts each bucket at its first record's second instead of a multiple of the
    bucket size since the epoch."""

    statements = SQLiteJobStore.statements.replacing(
        execution_counts=changed(
            sql.EXECUTION_COUNTS,
            "CAST(finished_at / :bucket AS INTEGER) * :bucket AS bucket_start",
            "CAST(finished_at AS INTEGER) AS bucket_start",
        )
    )


class ExecutionCountsSinceExclusiveStore(SQLiteJobStore):
    """Counts only records finished strictly after ``since``."""

    statements = SQLiteJobStore.statements.replacing(
        execution_counts=changed(
            sql.EXECUTION_COUNTS, "finished_at >= :since", "finished_at > :since + 0.000001"
        )
    )

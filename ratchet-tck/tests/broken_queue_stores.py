"""The mutation catalogue, queue half: broken stores for enqueue, claim, outcomes and reads.

Each store changes one behaviour of the embedded store, the way a store author's one-line
mistake would; ``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ratchet.spi import Completion, ExecutionStatus, Job, JobStatus, NewJob
from ratchet.stores.sqlite.store import SQLiteJobStore, SQLiteSession
from ratchet.stores.sqlite.testing import job_from_row
from ratchet.stores.sqlite.testing import statements as sql


def for_one(statement: str) -> str:
    """A statement over an ``{ids}`` list, for one ``:id``."""
    return changed(statement, "{ids}", ":id")


def changed(statement: str, old: str, new: str = "") -> str:
    """``statement`` with ``old`` replaced; refuses a replacement that would not apply (a
    mutant identical to the real store would make its row of the table meaningless)."""
    assert old in statement, f"{old!r} is not in the statement"
    return statement.replace(old, new)


# Time precision and the database clock.


class WholeSecondDelayStore(SQLiteJobStore):
    """Keeps enqueue delays in whole seconds (``int(delay_seconds)``)."""

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        super()._insert(conn, now, replace(job, delay_seconds=float(int(job.delay_seconds))))


class WholeSecondRetryDelayStore(SQLiteJobStore):
    """Keeps retry delays in whole seconds (an INTEGER parameter)."""

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return super().schedule_retry(
            job_id, claim_seq, error=error, delay_seconds=int(delay_seconds)
        )


class WholeSecondScheduleStore(SQLiteJobStore):
    """Stores explicit due times without their fraction of a second."""

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        if job.scheduled_at is not None:
            job = replace(job, scheduled_at=job.scheduled_at.replace(microsecond=0))
        super()._insert(conn, now, job)


class ClaimsAheadStore(SQLiteJobStore):
    """Claims jobs due within the next second ("to absorb clock jitter")."""

    @staticmethod
    def _candidates(
        conn: Any, now: float, limit: int, boost_seconds: float, queues: Any
    ) -> list[str]:
        return SQLiteJobStore._candidates(conn, now + 1.0, limit, boost_seconds, queues)


class WholeSecondClockStore(SQLiteJobStore):
    """Reads the database clock at one-second resolution (``strftime('%s', 'now')``)."""

    def database_time(self) -> datetime:
        with self._read() as conn:
            now = conn.execute("SELECT CAST(strftime('%s', 'now') AS REAL)").fetchone()[0]
        return datetime.fromtimestamp(now, UTC)


class LocalClockDelayStore(SQLiteJobStore):
    """Adds an enqueue delay to this process's clock instead of the database's."""

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        if job.scheduled_at is None:
            due = datetime.fromtimestamp(time.time() + job.delay_seconds, UTC)
            job = replace(job, scheduled_at=due)
        super()._insert(conn, now, job)


class LocalClockRetryStore(SQLiteJobStore):
    """Adds a retry delay to this process's clock instead of the database's."""

    statements = SQLiteJobStore.statements.replacing(
        schedule_retry=changed(sql.SCHEDULE_RETRY, ":now + :delay", ":local + :delay")
    )

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return self._fenced_outcome(
            "schedule_retry",
            {
                "id": job_id,
                "claim_seq": claim_seq,
                "error": error,
                "delay": delay_seconds,
                "local": time.time(),
            },
            status=ExecutionStatus.FAILED,
            message=error,
        )


# Claim order under a small limit.


class SortsAfterLimitStore(SQLiteJobStore):
    """Takes the first ``limit`` due jobs in creation order, then sorts only those."""

    @staticmethod
    def _candidates(
        conn: Any, now: float, limit: int, boost_seconds: float, queues: Any
    ) -> list[str]:
        rows = conn.execute(
            "SELECT id FROM (SELECT id, priority, scheduled_at FROM ratchet_job "
            "WHERE status = 'PENDING' AND scheduled_at <= ? ORDER BY created_at LIMIT ?) "
            "ORDER BY priority DESC, scheduled_at, id",
            (now, limit),
        )
        return [job_id for (job_id,) in rows]


class OrdersByIdWithinLevelStore(SQLiteJobStore):
    """Orders each priority level by id, forgetting the due time."""

    @staticmethod
    def _candidates(
        conn: Any, now: float, limit: int, boost_seconds: float, queues: Any
    ) -> list[str]:
        rows = conn.execute(
            "SELECT id FROM ratchet_job WHERE status = 'PENDING' AND scheduled_at <= ? "
            "ORDER BY priority DESC, id LIMIT ?",
            (now, limit),
        )
        return [job_id for (job_id,) in rows]


# Exact matching of keys and tags.


class CaseInsensitiveIdempotencyKeyStore(SQLiteJobStore):
    """Looks idempotency keys up case-insensitively (``COLLATE NOCASE``)."""

    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        with self._read() as conn:
            row = conn.execute(
                sql.SELECT_IDEMPOTENCY_KEY + " COLLATE NOCASE ORDER BY key", (key,)
            ).fetchone()
        return None if row is None else str(row[0])


class TrimmedIdempotencyKeyStore(SQLiteJobStore):
    """Strips whitespace from idempotency keys before storing them."""

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        key = job.idempotency_key
        super()._insert(conn, now, replace(job, idempotency_key=key and key.strip()))


class CaseInsensitiveBusinessKeyStore(SQLiteJobStore):
    """Finds the active holder of a business key case-insensitively (``lower() = lower()``)."""

    def find_active_job_by_business_key(self, key: str) -> Job | None:
        statement = changed(
            sql.SELECT_ACTIVE_BUSINESS_KEY,
            "business_key = :key",
            "lower(business_key) = lower(:key)",
        )
        with self._read() as conn:
            row = conn.execute(statement + " ORDER BY business_key", (key,)).fetchone()
        return None if row is None else job_from_row(row)


class PrefixTagStore(SQLiteJobStore):
    """Filters ``list_jobs`` by tag prefix (``tag LIKE ? || '%'``)."""

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        if tag is None:
            return super().list_jobs(status=status, limit=limit)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT job_id FROM ratchet_job_tag WHERE tag LIKE ? || '%'", (tag,)
            )
            ids = {job_id for (job_id,) in rows}
        return [job for job in super().list_jobs(status=status, limit=10**9) if job.id in ids][
            :limit
        ]


# Atomicity of enqueues.


class ChunkedEnqueueManyStore(SQLiteJobStore):
    """Commits a bulk enqueue in chunks of 500 jobs."""

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        for start in range(0, len(jobs), 500):
            with self._write() as (conn, now):
                for job in jobs[start : start + 500]:
                    self._insert(conn, now, job)


class DeduplicatingEnqueueManyStore(SQLiteJobStore):
    """Drops jobs of a batch that repeat an idempotency key of the same batch (last wins)."""

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        super().enqueue_many(list({job.idempotency_key or job.id: job for job in jobs}.values()))


class KeyReservedFirstStore(SQLiteJobStore):
    """Reserves a job's idempotency key in its own transaction before inserting the job,
    so a job rejected for its business key leaves its idempotency key taken."""

    def enqueue(self, job: NewJob) -> None:
        if job.idempotency_key is not None:
            with self._write() as (conn, now):
                conn.execute(
                    "INSERT OR IGNORE INTO ratchet_idempotency_key (key, job_id, created_at) "
                    "VALUES (?, ?, ?)",
                    (job.idempotency_key, job.id, now),
                )
        super().enqueue(job)

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        # The reservation is the job's own: let the real insert write it again.
        conn.execute(
            "DELETE FROM ratchet_idempotency_key WHERE key = ? AND job_id = ?",
            (job.idempotency_key, job.id),
        )
        super()._insert(conn, now, job)


# Outcomes and reads, method by method.


class CancelIgnoresStatusStore(SQLiteJobStore):
    """Cancels a job whatever its status."""

    def cancel_job(self, job_id: str) -> bool:
        statement = changed(sql.CANCEL_JOB, "AND status = 'PENDING'")
        with self._write() as (conn, now):
            return bool(conn.execute(statement, {"id": job_id, "now": now}).rowcount == 1)


class BatchDropsResultTypeStore(SQLiteJobStore):
    """Batched completions store the result but not its type."""

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        return super().complete_jobs([replace(c, result_type=None) for c in completions])


class BatchForgetsFinishTimeStore(SQLiteJobStore):
    """Batched completions leave ``finished_at`` unset."""

    forgetful = SQLiteJobStore.statements.replacing(
        complete_job=changed(sql.COMPLETE_JOB, "finished_at = :now, ")
    )

    def _complete_many(self, completions: Sequence[Completion]) -> set[str]:
        # The batch only: complete_job keeps the real statement.
        with self._write() as (conn, now):
            session = SQLiteSession(conn, now, self.forgetful)
            recorded = set()
            for c in completions:
                fence = {"id": c.job_id, "claim_seq": c.claim_seq}
                result = {"result_json": c.result_json, "result_type": c.result_type}
                if session.execute("complete_job", {**fence, **result}) == 1:
                    closing = {"execution_status": "SUCCEEDED", "message": None}
                    session.execute("close_execution", {**fence, **closing})
                    recorded.add(c.job_id)
            return recorded


class StatuslessFenceStore(SQLiteJobStore):
    """Fences a completion on ``claim_seq`` alone, not on the job still being RUNNING."""

    statements = SQLiteJobStore.statements.replacing(
        complete_job=changed(sql.COMPLETE_JOB, " AND status = 'RUNNING'")
    )


class RetryDropsBusinessKeyStore(SQLiteJobStore):
    """``retry_failed_job`` clears the job's business key instead of re-reserving it."""

    def retry_failed_job(self, job_id: str) -> bool:
        statement = changed(
            sql.RETRY_FAILED_JOB,
            "SET status = 'PENDING',",
            "SET status = 'PENDING', business_key = NULL,",
        )
        with self._write() as (conn, now):
            return bool(conn.execute(statement, {"id": job_id, "now": now}).rowcount == 1)


class OldestFirstListStore(SQLiteJobStore):
    """Lists jobs oldest first."""

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        jobs = super().list_jobs(status=status, tag=tag, limit=10**9)
        return sorted(jobs, key=lambda job: (job.created_at, job.id))[:limit]


class FindsFinishedKeyHolderStore(SQLiteJobStore):
    """``find_active_job_by_business_key`` returns the latest job with the key, finished or not."""

    def find_active_job_by_business_key(self, key: str) -> Job | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {sql.JOB_COLUMNS} FROM ratchet_job WHERE business_key = ? "
                "ORDER BY created_at DESC",
                (key,),
            ).fetchone()
        return None if row is None else job_from_row(row)


class ReleaseChargesAttemptStore(SQLiteJobStore):
    """``release_claim`` counts an attempt."""

    statements = SQLiteJobStore.statements.replacing(
        release_claim=changed(
            sql.RELEASE_CLAIM,
            "SET status = 'PENDING',",
            "SET status = 'PENDING', attempts = attempts + 1,",
        )
    )


class RetryIgnoresDelayStore(SQLiteJobStore):
    """``schedule_retry`` makes the job due at once, whatever the delay."""

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return super().schedule_retry(job_id, claim_seq, error=error, delay_seconds=0)


class CrashLimitCountsAttemptStore(SQLiteJobStore):
    """``fail_job`` counts an attempt even with ``count_attempt=False``."""

    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        return super().fail_job(job_id, claim_seq, error=error, count_attempt=True)

"""``PostgreSQLJobStore``: the Ratchet job store on PostgreSQL 14+ through psycopg 3.

Why it is safe for a cluster: the claim is one statement that locks each candidate row
with ``FOR UPDATE SKIP LOCKED`` before flipping it to RUNNING, so concurrent claimers on
any number of nodes never receive the same job; every outcome write is fenced by
``(id, status = 'RUNNING', claim_seq)`` and its row count is the answer; keys are unique
indexes; every time is the server's ``statement_timestamp()``.

Connections come from a ``psycopg_pool.ConnectionPool`` in autocommit mode: most methods
are a single statement (its own transaction, one round trip); the few multi-statement
steps use an explicit transaction. A transport failure raises
:class:`~ratchet.errors.StoreUnavailableError` (password redacted) and makes the pool
check its idle connections, so the next call gets a live one after a server restart or
``pg_terminate_backend``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import errors as pg_errors

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import (
    ClaimedJob,
    Completion,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    JobStore,
    NewJob,
)
from ratchet_store_postgresql import _enqueue, _rows
from ratchet_store_postgresql import _statements as sql
from ratchet_store_postgresql import _statements_cluster as cluster_sql
from ratchet_store_postgresql._cluster import ClusterOperations
from ratchet_store_postgresql._transactional import TransactionalEnqueue
from ratchet_store_postgresql.schema import apply_migrations
from ratchet_store_postgresql.schema import schema_sql as _schema_sql

__all__ = ["PostgreSQLJobStore"]

_POOL_OPTIONS = frozenset({"pool_min_size", "pool_max_size", "pool_timeout"})


class PostgreSQLJobStore(TransactionalEnqueue, ClusterOperations, JobStore):
    """JobStore on PostgreSQL. Build it with :meth:`from_url`; one instance per node.

    Thread-safe: every call borrows a pooled connection for its duration.
    """

    name = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        auto_migrate: bool = True,
        pool_min_size: int = 1,
        pool_max_size: int = 10,
        pool_timeout: float = 10.0,
    ) -> None:
        """Open a pool on ``url`` (``postgresql://…`` or ``postgresql+psycopg://…``).

        ``auto_migrate`` applies pending migrations now (safe when several nodes start at
        once). ``pool_timeout`` is how long a call waits for a free connection (or for the
        server to come back) before raising StoreUnavailableError.
        """
        super().__init__(
            url, pool_min_size=pool_min_size, pool_max_size=pool_max_size, pool_timeout=pool_timeout
        )
        if auto_migrate:
            try:
                self.apply_schema()
            except BaseException:
                self.close()
                raise

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **options: Any) -> PostgreSQLJobStore:
        """The plugin factory. Known options: ``pool_min_size``, ``pool_max_size``,
        ``pool_timeout``; others are ignored (the plugin contract)."""
        known = {k: v for k, v in options.items() if k in _POOL_OPTIONS}
        return cls(url, auto_migrate=auto_migrate, **known)

    # -- schema --------------------------------------------------------------------------

    def schema_sql(self) -> str:
        return _schema_sql()

    def apply_schema(self) -> list[str]:
        """Apply pending migrations under ``pg_advisory_xact_lock``; returns their names."""
        with self._connection() as conn:
            return apply_migrations(conn)

    def reset_for_tests(self) -> None:
        """TRUNCATE every Ratchet table except the schema ledger (tests and the kit only)."""
        self._execute(cluster_sql.TRUNCATE_ALL)

    # -- queue ---------------------------------------------------------------------------

    def enqueue(self, job: NewJob) -> None:
        self.enqueue_many([job])

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        _enqueue.check_batch(jobs)
        if not jobs:
            return
        hint = self._hint_for(jobs)

        def insert(retry: bool) -> None:  # idempotent: the job ids tell a lost first attempt
            with self._connection() as conn:
                _enqueue.insert_pooled(conn, jobs, hint, retry=retry)

        self._run_idempotent(insert)

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        if limit <= 0:
            return []
        rows = self._all(
            sql.CLAIM_DUE_JOBS,
            {
                "node_id": node_id,
                "limit": limit,
                "boost": float(priority_boost_seconds),
                "start_now": limit if start_now is None else max(0, int(start_now)),
            },
        )
        # The last column (after the claimed-job columns) is whether the start was recorded.
        return [_rows.claimed_job(row, start_recorded=bool(row[-1])) for row in rows]

    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        return self._execute(sql.MARK_STARTED, {"id": job_id, "claim_seq": claim_seq}) == 1

    def _fenced(self, statement: str, params: dict[str, Any]) -> bool:
        row = self._one(statement, params)
        return row is not None and row[0] == 1

    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        return self._fenced(
            sql.COMPLETE_JOB,
            {
                "id": job_id,
                "claim_seq": claim_seq,
                "result_json": result_json,
                "result_type": result_type,
                "execution_status": ExecutionStatus.SUCCEEDED.value,
                "message": None,
            },
        )

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        """SupportsBatchCompletion: one statement records the whole batch, fenced per row."""
        if not completions:
            return []
        rows = self._all(
            sql.COMPLETE_JOBS,
            {
                "id": [c.job_id for c in completions],
                "claim_seq": [c.claim_seq for c in completions],
                "result_json": [c.result_json for c in completions],
                "result_type": [c.result_type for c in completions],
            },
        )
        recorded = {row[0] for row in rows}
        return [c.job_id in recorded for c in completions]

    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        return self._fenced(
            sql.FAIL_JOB,
            {
                "id": job_id,
                "claim_seq": claim_seq,
                "attempt": int(count_attempt),
                "execution_status": ExecutionStatus.FAILED.value,
                "message": _enqueue.storable_text(error),
            },
        )

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return self._fenced(
            sql.SCHEDULE_RETRY,
            {
                "id": job_id,
                "claim_seq": claim_seq,
                "delay": float(delay_seconds),
                "execution_status": ExecutionStatus.FAILED.value,
                "message": _enqueue.storable_text(error),
            },
        )

    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        return self._fenced(
            sql.RELEASE_CLAIM,
            {
                "id": job_id,
                "claim_seq": claim_seq,
                "execution_status": ExecutionStatus.RELEASED.value,
                "message": _enqueue.storable_text(message),
            },
        )

    def cancel_job(self, job_id: str) -> bool:
        return self._execute(sql.CANCEL_JOB, {"id": job_id}) == 1

    def retry_failed_job(self, job_id: str) -> bool:
        with self._connection() as conn:
            try:
                return conn.execute(sql.RETRY_FAILED_JOB, {"id": job_id}).rowcount == 1
            except pg_errors.UniqueViolation as exc:
                row = conn.execute(sql.SELECT_BUSINESS_KEY, (job_id,)).fetchone()
                key = None if row is None else row[0]
                holder = conn.execute(sql.SELECT_ACTIVE_BUSINESS_KEY, (key,)).fetchone()
                holder_id = None if holder is None else holder[0]
                raise BusinessKeyConflictError(
                    f"Job {job_id!r} cannot be retried: its business key {key!r} is now held "
                    f"by active job {holder_id!r}. Retry it after that job finishes, or "
                    "cancel that job first.",
                    key=key or "",
                    existing_job_id=holder_id,
                ) from exc

    def get_job(self, job_id: str) -> Job | None:
        row = self._one(sql.SELECT_JOB, (job_id,), idempotent=True)
        return None if row is None else _rows.job(row)

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        params = {
            "status": None if status is None else JobStatus(status).value,
            "tag": tag,
            "limit": int(limit),
        }
        statement = sql.LIST_JOBS[status is not None, tag is not None]
        return [_rows.job(row) for row in self._all(statement, params, idempotent=True)]

    def count_jobs(self) -> dict[JobStatus, int]:
        counts = dict.fromkeys(JobStatus, 0)
        for status, count in self._all(sql.COUNT_JOBS, idempotent=True):
            counts[JobStatus(status)] = int(count)
        return counts

    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        row = self._one(sql.SELECT_IDEMPOTENCY_KEY, (key,), idempotent=True)
        return None if row is None else str(row[0])

    def find_active_job_by_business_key(self, key: str) -> Job | None:
        row = self._one(sql.SELECT_ACTIVE_BUSINESS_KEY, (key,), idempotent=True)
        return None if row is None else _rows.job(row)

    # -- executions ----------------------------------------------------------------------

    def list_executions(self, job_id: str) -> list[Execution]:
        rows = self._all(sql.SELECT_EXECUTIONS, (job_id,), idempotent=True)
        return [_rows.execution(row) for row in rows]

    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        params = {
            "id": job_id,
            "claim_seq": claim_seq,
            "status": status.value,
            "message": _enqueue.storable_text(message),
        }
        return self._execute(sql.RECORD_LATE_OUTCOME, params) == 1

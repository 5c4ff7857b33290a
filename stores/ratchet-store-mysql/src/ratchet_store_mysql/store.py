"""``MySQLJobStore``: the Ratchet job store on MySQL 8.0.16+ and MariaDB 10.6+ (PyMySQL).

Why it is safe for a cluster: a claim finds its candidates through the claim index and
locks exactly the rows it takes with ``FOR UPDATE SKIP LOCKED`` before flipping them to
RUNNING, so concurrent claimers on any number of nodes never receive the same job; every
outcome write is fenced by ``(id, status = 'RUNNING', claim_seq)`` and its matched-row
count is the answer (connections carry ``CLIENT.FOUND_ROWS``); keys are unique indexes
(the business key through a generated column that is NULL once the job ended); every time
is the server's ``UTC_TIMESTAMP(6)``.

Connections come from a small pool of our own (:mod:`ratchet_store_mysql._pool`) in
autocommit mode: single statements are their own transaction; multi-statement steps are
short explicit transactions. A transport failure raises
:class:`~ratchet.errors.StoreUnavailableError` (password redacted) and the pool replaces
dead connections, so the store works again after a server restart or ``KILL``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pymysql
from pymysql.cursors import Cursor

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
from ratchet_store_mysql import _claim, _enqueue, _rows
from ratchet_store_mysql import _statements as sql
from ratchet_store_mysql import _statements_cluster as cluster_sql
from ratchet_store_mysql._cluster import ClusterOperations, microseconds
from ratchet_store_mysql._transactional import TransactionalEnqueue
from ratchet_store_mysql.schema import apply_migrations
from ratchet_store_mysql.schema import schema_sql as _schema_sql

__all__ = ["MySQLJobStore"]

_POOL_OPTIONS = frozenset({"pool_max_size", "pool_timeout"})


class MySQLJobStore(TransactionalEnqueue, ClusterOperations, JobStore):
    """JobStore on MySQL / MariaDB. Build it with :meth:`from_url`; one instance per node.

    Thread-safe: every call borrows a pooled connection for its duration.
    """

    name = "mysql"

    def __init__(
        self,
        url: str,
        *,
        auto_migrate: bool = True,
        pool_max_size: int = 10,
        pool_timeout: float = 10.0,
    ) -> None:
        """Open a store on ``url`` (``mysql://…`` or ``mysql+pymysql://…``).

        ``auto_migrate`` applies pending migrations now (safe when several nodes start at
        once). ``pool_timeout`` is how long a call waits for a free connection before
        raising StoreUnavailableError.
        """
        super().__init__(url, pool_max_size=pool_max_size, pool_timeout=pool_timeout)
        if auto_migrate:
            try:
                self.apply_schema()
            except BaseException:
                self.close()
                raise

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **options: Any) -> MySQLJobStore:
        """The plugin factory. Known options: ``pool_max_size``, ``pool_timeout``; others
        are ignored (the plugin contract)."""
        known = {k: v for k, v in options.items() if k in _POOL_OPTIONS}
        return cls(url, auto_migrate=auto_migrate, **known)

    # -- schema --------------------------------------------------------------------------

    def schema_sql(self) -> str:
        return _schema_sql()

    def apply_schema(self) -> list[str]:
        """Apply pending migrations under a named lock (GET_LOCK); returns their names."""
        with self._connection() as conn:
            return apply_migrations(conn, self._settings.database)

    def reset_for_tests(self) -> None:
        """Delete every row of every Ratchet table except the schema ledger (tests only)."""

        def work(cursor: Cursor) -> None:
            for table in cluster_sql.DATA_TABLES:
                cursor.execute(f"DELETE FROM {table}")

        self._transaction(work)

    # -- queue ---------------------------------------------------------------------------

    def enqueue(self, job: NewJob) -> None:
        self.enqueue_many([job])

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        _enqueue.check_batch(jobs)
        if not jobs:
            return

        def insert(retry: bool) -> None:  # idempotent: the job ids tell a lost first attempt
            try:
                self._transaction(lambda cursor: _enqueue.insert_jobs(cursor, jobs))
            except _enqueue.KeyConflict as conflict:  # rolled back: the holder is committed
                if retry and _enqueue.all_stored(self._one, jobs):
                    return  # the first attempt committed; only its answer was lost
                raise _enqueue.conflict_error(self._one, jobs, conflict) from conflict.error

        self._run_idempotent(insert)

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        limit = int(limit)
        if limit <= 0:
            return []
        _enqueue.check_length("Node id", node_id, _enqueue.ID_BYTES)
        return self._with_connection(
            lambda conn: _claim.claim_due_jobs(
                conn,
                node_id=node_id,
                limit=limit,
                boost_seconds=float(priority_boost_seconds),
                start_now=None if start_now is None else int(start_now),
            )
        )

    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        # CLIENT.FOUND_ROWS: a start already recorded matches (1) though nothing changes.
        return self._execute(sql.MARK_STARTED, {"id": job_id, "claim_seq": claim_seq}) == 1

    def _fenced(self, job_update: str, params: dict[str, Any]) -> bool:
        """``job_update`` (fenced by id, RUNNING and claim_seq) and, when it matched, the
        close of its execution record, in one transaction."""

        def work(cursor: Cursor) -> bool:
            if cursor.execute(job_update, params) != 1:
                return False
            cursor.execute(sql.CLOSE_EXECUTION, params)
            return True

        return self._transaction(work)

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
        """SupportsBatchCompletion: one transaction of three statements for the whole
        batch (see ``LOCK_RUNNING``), each row fenced by its own ``claim_seq``."""
        if not completions:
            return []

        def work(cursor: Cursor) -> set[str]:
            ids = sorted(c.job_id for c in completions)
            cursor.execute(sql.LOCK_RUNNING.format(ids=sql.placeholders(len(ids))), ids)
            rows = cursor.fetchall()
            current = {_rows.text(row[0]): int(row[1]) for row in rows}
            matched = [c for c in completions if current.get(c.job_id) == c.claim_seq]
            if not matched:
                return set()
            now = rows[0][2]
            cases = " ".join([sql.RESULT_CASE] * len(matched))
            cursor.execute(
                sql.COMPLETE_LOCKED.format(cases=cases, ids=sql.placeholders(len(matched))),
                [
                    *(v for c in matched for v in (c.job_id, c.result_json)),
                    *(v for c in matched for v in (c.job_id, c.result_type)),
                    now,
                    now,
                    *(c.job_id for c in matched),
                ],
            )
            # CLIENT.FOUND_ROWS: rows matched; every locked, matching row must be updated.
            if cursor.rowcount != len(matched):
                raise AssertionError(
                    f"completed {cursor.rowcount} of {len(matched)} locked jobs; the "
                    "transaction is rolled back"
                )
            pairs = " OR ".join([sql.EXECUTION_KEY] * len(matched))
            cursor.execute(
                sql.CLOSE_EXECUTIONS.format(pairs=pairs),
                [now, *(v for c in matched for v in (c.job_id, c.claim_seq))],
            )
            return {c.job_id for c in matched}

        recorded = self._transaction(work)
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
                "delay_us": microseconds(delay_seconds),
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
        try:
            return self._execute(sql.RETRY_FAILED_JOB, {"id": job_id}) == 1
        except pymysql.err.IntegrityError as exc:
            if exc.args[0] != _enqueue.ER_DUP_ENTRY:
                raise
            row = self._one(sql.SELECT_BUSINESS_KEY, (job_id,))
            key = None if row is None else _rows.text_or_none(row[0])
            holder = self._one(sql.SELECT_ACTIVE_BUSINESS_KEY, (key,))
            holder_id = None if holder is None else _rows.text(holder[0])
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
            "limit": max(0, int(limit)),
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
        return None if row is None else _rows.text(row[0])

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

"""The embedded store: SQLite, persistent, safe for several worker processes on one machine.

Why it is safe across processes: every write runs in ``BEGIN IMMEDIATE``, which takes
SQLite's single write lock before reading, so a claim's read-then-update can never
interleave with another process's claim. WAL mode keeps readers unblocked meanwhile.
Within one process a lock serialises use of the store's one connection.

``memory://`` is the same engine on a private in-memory database: one process, nothing
persisted, every guarantee otherwise identical.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

from ratchet._types import (
    ClaimedJob,
    Completion,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NewJob,
)
from ratchet.errors import (
    BusinessKeyConflictError,
    DuplicateIdempotencyKeyError,
    InvalidStoreURLError,
    RatchetError,
    StoreUnavailableError,
)
from ratchet.spi import JobStore
from ratchet.stores.sqlite import _statements as sql
from ratchet.stores.sqlite._cluster import SQLiteClusterOperations
from ratchet.stores.sqlite._database import (
    DATA_TABLES,
    SCHEMA_LEDGER,
    Database,
    migrations,
    schema_sql,
)
from ratchet.stores.sqlite._files import DatabaseFile, database_error, require_database_file
from ratchet.stores.sqlite._rows import (
    claimed_from_row,
    execution_from_row,
    job_from_row,
    to_epoch,
)

__all__ = ["SQLiteJobStore", "schema_sql"]


class SQLiteJobStore(SQLiteClusterOperations, JobStore):
    """JobStore on SQLite. ``path=None`` keeps everything in memory (``memory://``)."""

    name = "sqlite"

    def __init__(
        self,
        path: str | None,
        *,
        memory_name: str | None = None,
        busy_timeout: float = 30.0,
        auto_migrate: bool = True,
        must_exist: bool = False,
    ) -> None:
        self.path = path
        self.memory_name = memory_name
        self._closed = False
        self._file: DatabaseFile | None = None
        if path is None:
            self.name = "memory"
            self._db = Database.shared_memory(memory_name, busy_timeout)
            auto_migrate = True  # a fresh in-memory database is useless without its tables
        else:
            if must_exist:
                require_database_file(path)
            try:
                self._db = Database(path, busy_timeout)
            except sqlite3.Error as exc:
                raise database_error(path, exc) from exc
            self._file = DatabaseFile.opened(path)
        self._lock = self._db.lock
        self._conn = self._db.conn
        if auto_migrate:
            try:
                self.apply_schema()
            except BaseException:
                self.close()
                raise

    @classmethod
    def from_url(
        cls, url: str, *, auto_migrate: bool = True, must_exist: bool = False, **_options: Any
    ) -> SQLiteJobStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite:///:memory:``.

        With ``must_exist`` a missing file raises StoreNotFoundError instead of being
        created. A file that cannot be opened or is not a database raises
        StoreUnavailableError naming the path.
        """
        parts = urlsplit(url)
        if parts.scheme != "sqlite":
            raise InvalidStoreURLError(f"{url!r} is not a sqlite:// URL.")
        if parts.netloc:
            raise InvalidStoreURLError(
                f"Store URL {url!r} names a host ({parts.netloc!r}); SQLite files are local. "
                "Use three slashes for a relative path (sqlite:///ratchet.db) or four for an "
                "absolute one (sqlite:////var/lib/app/ratchet.db)."
            )
        path = unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
        if not path:
            raise InvalidStoreURLError(
                f"Store URL {url!r} has no file path; write sqlite:///ratchet.db."
            )
        return cls(
            None if path == ":memory:" else path,
            auto_migrate=auto_migrate,
            must_exist=must_exist,
        )

    @classmethod
    def from_memory_url(cls, url: str, **_options: Any) -> SQLiteJobStore:
        """``memory://``: a private in-memory database for this store instance.

        ``memory://NAME``: one in-memory database shared by every store opened with that
        name in this process while any of them is open (several "nodes" in one process).
        """
        parts = urlsplit(url)
        if parts.scheme != "memory":
            raise InvalidStoreURLError(f"{url!r} is not a memory:// URL.")
        name = (parts.netloc + parts.path).strip("/") or None
        return cls(None, memory_name=name)

    def describe(self) -> str:
        if self.path is None:
            return f"memory://{self.memory_name or ''}"
        return f"sqlite:///{self.path}"

    # -- connection handling -------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[tuple[sqlite3.Connection, float]]:
        """One write transaction holding SQLite's write lock, with the database time."""
        with self._lock, self._translated_errors():
            self._check_open()
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreUnavailableError(
                    f"SQLite store {self.describe()} stayed locked: {exc}"
                ) from exc
            try:
                now = self._conn.execute(sql.NOW).fetchone()[0]
                yield self._conn, now
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._translated_errors():
            self._check_open()
            yield self._conn

    def _check_open(self) -> None:
        if self._closed:
            raise RatchetError(f"The store {self.describe()} is closed.")
        if self._file is not None:
            self._file.check()  # deleted or replaced under us: never write to the old file

    @contextmanager
    def _translated_errors(self) -> Iterator[None]:
        """SQLite failures of the file itself (locked, unreadable, damaged) raise
        StoreUnavailableError naming the path; constraint violations and programming
        errors pass through unchanged."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise self._unusable(exc) from exc
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:  # IntegrityError and the like
                raise
            raise self._unusable(exc) from exc

    def _unusable(self, exc: sqlite3.Error) -> StoreUnavailableError:
        if self.path is None:
            return StoreUnavailableError(f"SQLite store {self.describe()} failed: {exc}")
        return database_error(self.path, exc)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.release()

    def reset_for_tests(self) -> None:
        """Delete every row of every Ratchet table (conformance kit and test suites only)."""
        with self._write() as (conn, _now):
            for table in DATA_TABLES:
                conn.execute(f"DELETE FROM {table}")

    # -- schema --------------------------------------------------------------------------

    def schema_sql(self) -> str:
        return schema_sql()

    def apply_schema(self) -> list[str]:
        applied: list[str] = []
        with self._write() as (conn, now):
            conn.execute(SCHEMA_LEDGER)
            done = {row[0] for row in conn.execute("SELECT version FROM ratchet_schema_version")}
            for version, name, text in migrations():
                if version in done:
                    continue
                for statement in text.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO ratchet_schema_version (version, name, applied_at) VALUES (?,?,?)",
                    (version, name, now),
                )
                applied.append(name)
        return applied

    # -- queue ---------------------------------------------------------------------------

    def enqueue(self, job: NewJob) -> None:
        with self._write() as (conn, now):
            self._insert(conn, now, job)

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        with self._write() as (conn, now):
            for job in jobs:
                self._insert(conn, now, job)

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        if job.idempotency_key is not None:
            existing = conn.execute(sql.SELECT_IDEMPOTENCY_KEY, (job.idempotency_key,)).fetchone()
            if existing is not None:
                raise DuplicateIdempotencyKeyError(
                    f"Idempotency key {job.idempotency_key!r} was already used by job "
                    f"{existing[0]!r}; keys are unique forever. Look that job up instead of "
                    "enqueueing again, or use a new key.",
                    key=job.idempotency_key,
                    existing_job_id=existing[0],
                )
            conn.execute(sql.INSERT_IDEMPOTENCY_KEY, (job.idempotency_key, job.id, now))
        scheduled = (
            to_epoch(job.scheduled_at) if job.scheduled_at is not None else now + job.delay_seconds
        )
        try:
            conn.execute(
                sql.INSERT_JOB,
                {
                    "id": job.id,
                    "name": job.name,
                    "target": job.target,
                    "args_json": job.args_json,
                    "kwargs_json": job.kwargs_json,
                    "priority": int(job.priority),
                    "max_retries": job.max_retries,
                    "backoff": job.backoff.value,
                    "backoff_ms": job.backoff_ms,
                    "timeout_seconds": job.timeout_seconds,
                    "business_key": job.business_key,
                    "idempotency_key": job.idempotency_key,
                    "tags_json": json.dumps(list(job.tags)),
                    "params_json": json.dumps(job.params),
                    "recurring_id": job.recurring_id,
                    "scheduled_at": scheduled,
                    "now": now,
                },
            )
        except sqlite3.IntegrityError as exc:
            if job.business_key is not None and "business_key" in str(exc):
                holder = conn.execute(
                    sql.SELECT_ACTIVE_BUSINESS_KEY, (job.business_key,)
                ).fetchone()
                holder_id = holder[0] if holder else None
                raise BusinessKeyConflictError(
                    f"Business key {job.business_key!r} is held by active job {holder_id!r}; "
                    "a business key belongs to one pending or running job at a time. Wait for "
                    "it to finish, cancel it, or use another key.",
                    key=job.business_key,
                    existing_job_id=holder_id,
                ) from exc
            raise RatchetError(f"Job {job.id!r} could not be stored: {exc}") from exc
        conn.executemany(sql.INSERT_TAG, [(tag, job.id) for tag in job.tags])

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
        starting = limit if start_now is None else start_now
        with self._write() as (conn, now):
            claimed: list[ClaimedJob] = []
            for job_id in self._candidates(conn, now, limit, priority_boost_seconds):
                start = len(claimed) < starting
                row = conn.execute(
                    sql.CLAIM_JOB,
                    {"id": job_id, "node_id": node_id, "now": now, "start": int(start)},
                ).fetchone()
                if row is None:  # cannot happen under BEGIN IMMEDIATE; kept as a guard
                    continue
                job = claimed_from_row(row, start_recorded=start)
                conn.execute(
                    sql.OPEN_EXECUTION,
                    {
                        "id": job.id,
                        "claim_seq": job.claim_seq,
                        "attempt": job.attempt,
                        "node_id": node_id,
                        "now": now,
                    },
                )
                claimed.append(job)
            return claimed

    @staticmethod
    def _candidates(
        conn: sqlite3.Connection, now: float, limit: int, boost_seconds: float
    ) -> list[str]:
        """Ids of the first ``limit`` due jobs in claim order (inside the write lock)."""
        if boost_seconds > 0:
            rows = conn.execute(
                sql.CLAIM_CANDIDATES_WITH_BOOST,
                {"now": now, "limit": limit, "boost": boost_seconds},
            )
        else:
            rows = conn.execute(sql.CLAIM_CANDIDATES_WITHOUT_BOOST, {"now": now, "limit": limit})
        return [job_id for (job_id,) in rows.fetchall()]

    def _fenced_outcome(
        self,
        statement: str,
        params: dict[str, Any],
        *,
        execution_status: ExecutionStatus,
        message: str | None,
    ) -> bool:
        with self._write() as (conn, now):
            return self._apply_fenced(
                conn, now, statement, params, execution_status=execution_status, message=message
            )

    @staticmethod
    def _apply_fenced(
        conn: sqlite3.Connection,
        now: float,
        statement: str,
        params: dict[str, Any],
        *,
        execution_status: ExecutionStatus,
        message: str | None,
    ) -> bool:
        """Inside a write transaction: the fenced job update and, when it matched, the
        close of its execution record."""
        if conn.execute(statement, {**params, "now": now}).rowcount != 1:
            return False
        conn.execute(
            sql.CLOSE_EXECUTION,
            {
                "id": params["id"],
                "claim_seq": params["claim_seq"],
                "status": execution_status.value,
                "message": message,
                "now": now,
            },
        )
        return True

    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        return self._fenced_outcome(
            sql.COMPLETE_JOB,
            {
                "id": job_id,
                "claim_seq": claim_seq,
                "result_json": result_json,
                "result_type": result_type,
            },
            execution_status=ExecutionStatus.SUCCEEDED,
            message=None,
        )

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        """SupportsBatchCompletion: the whole batch in one write transaction (one commit,
        one hold of SQLite's write lock), fenced per row."""
        if not completions:
            return []
        with self._write() as (conn, now):
            return [
                self._apply_fenced(
                    conn,
                    now,
                    sql.COMPLETE_JOB,
                    {
                        "id": c.job_id,
                        "claim_seq": c.claim_seq,
                        "result_json": c.result_json,
                        "result_type": c.result_type,
                    },
                    execution_status=ExecutionStatus.SUCCEEDED,
                    message=None,
                )
                for c in completions
            ]

    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        with self._write() as (conn, _now):
            changed = conn.execute(sql.MARK_STARTED, {"id": job_id, "claim_seq": claim_seq})
            return bool(changed.rowcount == 1)

    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        return self._fenced_outcome(
            sql.FAIL_JOB,
            {"id": job_id, "claim_seq": claim_seq, "error": error, "attempt": int(count_attempt)},
            execution_status=ExecutionStatus.FAILED,
            message=error,
        )

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return self._fenced_outcome(
            sql.SCHEDULE_RETRY,
            {"id": job_id, "claim_seq": claim_seq, "error": error, "delay": delay_seconds},
            execution_status=ExecutionStatus.FAILED,
            message=error,
        )

    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        return self._fenced_outcome(
            sql.RELEASE_CLAIM,
            {"id": job_id, "claim_seq": claim_seq},
            execution_status=ExecutionStatus.RELEASED,
            message=message,
        )

    def cancel_job(self, job_id: str) -> bool:
        with self._write() as (conn, now):
            return bool(conn.execute(sql.CANCEL_JOB, {"id": job_id, "now": now}).rowcount == 1)

    def retry_failed_job(self, job_id: str) -> bool:
        with self._write() as (conn, now):
            try:
                changed = conn.execute(sql.RETRY_FAILED_JOB, {"id": job_id, "now": now}).rowcount
            except sqlite3.IntegrityError as exc:
                key_row = conn.execute(
                    "SELECT business_key FROM ratchet_job WHERE id = ?", (job_id,)
                ).fetchone()
                key = key_row[0] if key_row else None
                holder = conn.execute(sql.SELECT_ACTIVE_BUSINESS_KEY, (key,)).fetchone()
                raise BusinessKeyConflictError(
                    f"Job {job_id!r} cannot be retried: its business key {key!r} is now held "
                    f"by active job {holder[0] if holder else None!r}. Retry it after that job "
                    "finishes, or cancel that job first.",
                    key=key or "",
                    existing_job_id=holder[0] if holder else None,
                ) from exc
            return bool(changed == 1)

    def get_job(self, job_id: str) -> Job | None:
        with self._read() as conn:
            row = conn.execute(sql.SELECT_JOB, (job_id,)).fetchone()
        return None if row is None else job_from_row(row)

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        clauses: list[str] = []
        params: list[Any] = []
        if status is not None:
            clauses.append("status = ?")
            params.append(JobStatus(status).value)
        if tag is not None:
            clauses.append("id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = ?)")
            params.append(tag)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        query = (
            f"SELECT {sql.JOB_COLUMNS} FROM ratchet_job {where} "
            "ORDER BY created_at DESC, id DESC LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(query, (*params, int(limit))).fetchall()
        return [job_from_row(row) for row in rows]

    def count_jobs(self) -> dict[JobStatus, int]:
        counts = dict.fromkeys(JobStatus, 0)
        with self._read() as conn:
            for status, count in conn.execute(sql.COUNT_JOBS):
                counts[JobStatus(status)] = count
        return counts

    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        with self._read() as conn:
            row = conn.execute(sql.SELECT_IDEMPOTENCY_KEY, (key,)).fetchone()
        return None if row is None else str(row[0])

    def find_active_job_by_business_key(self, key: str) -> Job | None:
        with self._read() as conn:
            row = conn.execute(sql.SELECT_ACTIVE_BUSINESS_KEY, (key,)).fetchone()
        return None if row is None else job_from_row(row)

    # -- executions ----------------------------------------------------------------------

    def list_executions(self, job_id: str) -> list[Execution]:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_EXECUTIONS, (job_id,)).fetchall()
        return [execution_from_row(row) for row in rows]

    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        with self._write() as (conn, now):
            changed = conn.execute(
                sql.RECORD_LATE_OUTCOME,
                {
                    "id": job_id,
                    "claim_seq": claim_seq,
                    "status": status.value,
                    "message": message,
                    "now": now,
                },
            ).rowcount
        return bool(changed == 1)

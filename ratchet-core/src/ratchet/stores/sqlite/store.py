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
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from ratchet._messages import ORPHAN_RECOVERED_MESSAGE
from ratchet._types import (
    BackoffPolicy,
    ClaimedJob,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
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

__all__ = ["SQLiteJobStore", "schema_sql"]

_SCHEMA_LEDGER = """
CREATE TABLE IF NOT EXISTS ratchet_schema_version (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  REAL NOT NULL
)
"""


def _to_datetime(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def _to_epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        raise ValueError(
            f"Scheduled time {moment!r} has no time zone; pass an aware datetime "
            "(for example datetime.now(UTC) + timedelta(minutes=5))."
        )
    return moment.timestamp()


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("ratchet.stores.sqlite").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


_DATA_TABLES = (
    "ratchet_recurring",
    "ratchet_job",
    "ratchet_job_tag",
    "ratchet_idempotency_key",
    "ratchet_execution",
    "ratchet_node",
    "ratchet_lock",
    "ratchet_recurring_fire",
    "ratchet_job_archive",
)


class _Database:
    """One SQLite connection and the lock that serialises its use, shared by the store
    instances that opened it."""

    _shared: ClassVar[dict[str, _Database]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str | None, busy_timeout: float, name: str | None = None) -> None:
        self.name = name
        self.lock = threading.RLock()
        self.users = 1
        self.conn = sqlite3.connect(
            ":memory:" if path is None else path,
            timeout=busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        if path is not None:
            self.conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a committed job survives a power cut, not only a process crash.
            self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")

    @classmethod
    def shared_memory(cls, name: str | None, busy_timeout: float) -> _Database:
        if name is None:
            return cls(None, busy_timeout)
        with cls._shared_lock:
            database = cls._shared.get(name)
            if database is None:
                database = cls._shared[name] = cls(None, busy_timeout, name)
            else:
                database.users += 1
            return database

    def release(self) -> None:
        with self._shared_lock:
            self.users -= 1
            if self.users > 0:
                return
            if self.name is not None:
                self._shared.pop(self.name, None)
        self.conn.close()


def schema_sql() -> str:
    """Every migration of the embedded store's schema, in order, as plain SQL."""
    return "\n".join(f"-- {name}\n{text}" for _, name, text in _migrations())


class SQLiteJobStore(JobStore):
    """JobStore on SQLite. ``path=None`` keeps everything in memory (``memory://``)."""

    name = "sqlite"

    def __init__(
        self,
        path: str | None,
        *,
        memory_name: str | None = None,
        busy_timeout: float = 30.0,
        auto_migrate: bool = True,
    ) -> None:
        self.path = path
        self.memory_name = memory_name
        self._closed = False
        if path is None:
            self.name = "memory"
            self._db = _Database.shared_memory(memory_name, busy_timeout)
            auto_migrate = True  # a fresh in-memory database is useless without its tables
        else:
            self._db = _Database(path, busy_timeout)
        self._lock = self._db.lock
        self._conn = self._db.conn
        if auto_migrate:
            self.apply_schema()

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **_options: Any) -> SQLiteJobStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite:///:memory:``."""
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
        return cls(None if path == ":memory:" else path, auto_migrate=auto_migrate)

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
        with self._lock:
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
        with self._lock:
            self._check_open()
            yield self._conn

    def _check_open(self) -> None:
        if self._closed:
            raise RatchetError(f"The store {self.describe()} is closed.")

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.release()

    def reset_for_tests(self) -> None:
        """Delete every row of every Ratchet table (conformance kit and test suites only)."""
        with self._write() as (conn, _now):
            for table in _DATA_TABLES:
                conn.execute(f"DELETE FROM {table}")

    # -- schema --------------------------------------------------------------------------

    def schema_sql(self) -> str:
        return schema_sql()

    def apply_schema(self) -> list[str]:
        applied: list[str] = []
        with self._write() as (conn, now):
            conn.execute(_SCHEMA_LEDGER)
            done = {row[0] for row in conn.execute("SELECT version FROM ratchet_schema_version")}
            for version, name, text in _migrations():
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
            _to_epoch(job.scheduled_at) if job.scheduled_at is not None else now + job.delay_seconds
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
        self, *, node_id: str, limit: int, priority_boost_seconds: float
    ) -> list[ClaimedJob]:
        if limit <= 0:
            return []
        with self._write() as (conn, now):
            claimed: list[ClaimedJob] = []
            for job_id in self._candidates(conn, now, limit, priority_boost_seconds):
                row = conn.execute(
                    sql.CLAIM_JOB, {"id": job_id, "node_id": node_id, "now": now}
                ).fetchone()
                if row is None:  # cannot happen under BEGIN IMMEDIATE; kept as a guard
                    continue
                job = self._claimed(row)
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

    @staticmethod
    def _claimed(row: Sequence[Any]) -> ClaimedJob:
        return ClaimedJob(
            id=row[0],
            name=row[1],
            target=row[2],
            args_json=row[3],
            kwargs_json=row[4],
            priority=row[5],
            attempt=row[6] + 1,
            max_retries=row[7],
            backoff=BackoffPolicy(row[8]),
            backoff_ms=row[9],
            timeout_seconds=row[10],
            crash_count=row[11],
            claim_seq=row[12],
            params=json.loads(row[13]),
            business_key=row[14],
            idempotency_key=row[15],
            recurring_id=row[16],
            scheduled_at=datetime.fromtimestamp(row[17], UTC),
            claimed_at=datetime.fromtimestamp(row[18], UTC),
        )

    def _fenced_outcome(
        self,
        statement: str,
        params: dict[str, Any],
        *,
        execution_status: ExecutionStatus,
        message: str | None,
    ) -> bool:
        with self._write() as (conn, now):
            changed = conn.execute(statement, {**params, "now": now}).rowcount
            if changed != 1:
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

    def fail_job(self, job_id: str, claim_seq: int, *, error: str) -> bool:
        return self._fenced_outcome(
            sql.FAIL_JOB,
            {"id": job_id, "claim_seq": claim_seq, "error": error},
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
            execution_status=ExecutionStatus.FAILED,
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
        return None if row is None else self._job(row)

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
        return [self._job(row) for row in rows]

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
        return None if row is None else self._job(row)

    @staticmethod
    def _job(row: Sequence[Any]) -> Job:
        result_json = row[21]
        return Job(
            id=row[0],
            name=row[1],
            target=row[2],
            args=tuple(_lenient_json(row[3], [])),
            kwargs=dict(_lenient_json(row[4], {})),
            status=JobStatus(row[5]),
            priority=row[6],
            attempts=row[7],
            max_retries=row[8],
            backoff=BackoffPolicy(row[9]),
            backoff_ms=row[10],
            timeout_seconds=row[11],
            crash_count=row[12],
            claim_seq=row[13],
            owner=row[14],
            claimed_at=_to_datetime(row[15]),
            business_key=row[16],
            idempotency_key=row[17],
            tags=tuple(json.loads(row[18])),
            params=json.loads(row[19]),
            recurring_id=row[20],
            result=None if result_json is None else json.loads(result_json),
            result_type=row[22],
            last_error=row[23],
            scheduled_at=datetime.fromtimestamp(row[24], UTC),
            created_at=datetime.fromtimestamp(row[25], UTC),
            started_at=_to_datetime(row[26]),
            finished_at=_to_datetime(row[27]),
        )

    # -- executions ----------------------------------------------------------------------

    def list_executions(self, job_id: str) -> list[Execution]:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_EXECUTIONS, (job_id,)).fetchall()
        return [
            Execution(
                job_id=row[0],
                claim_seq=row[1],
                attempt=row[2],
                node_id=row[3],
                status=ExecutionStatus(row[4]),
                message=row[5],
                started_at=datetime.fromtimestamp(row[6], UTC),
                finished_at=_to_datetime(row[7]),
            )
            for row in rows
        ]

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

    # -- nodes ---------------------------------------------------------------------------

    def register_node(self, node_id: str) -> None:
        with self._write() as (conn, now):
            conn.execute(sql.UPSERT_NODE, {"node_id": node_id, "now": now})

    def heartbeat(self, node_id: str) -> None:
        with self._write() as (conn, now):
            conn.execute(sql.HEARTBEAT, {"node_id": node_id, "now": now})

    def list_nodes(self) -> list[NodeInfo]:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_NODES).fetchall()
        return [self._node(row) for row in rows]

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        with self._read() as conn:
            now = conn.execute(sql.NOW).fetchone()[0]
            rows = conn.execute(
                sql.SELECT_STALE_NODES, {"now": now, "grace": grace_seconds}
            ).fetchall()
        return [self._node(row) for row in rows]

    @staticmethod
    def _node(row: Sequence[Any]) -> NodeInfo:
        return NodeInfo(
            node_id=row[0],
            started_at=datetime.fromtimestamp(row[1], UTC),
            heartbeat_at=datetime.fromtimestamp(row[2], UTC),
        )

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        with self._write() as (conn, _now):
            return sum(
                conn.execute("DELETE FROM ratchet_node WHERE node_id = ?", (node_id,)).rowcount
                for node_id in node_ids
            )

    def database_time(self) -> datetime:
        with self._read() as conn:
            return datetime.fromtimestamp(conn.execute(sql.NOW).fetchone()[0], UTC)

    # -- locks ---------------------------------------------------------------------------

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        _check_ttl(ttl_seconds)
        with self._write() as (conn, now):
            changed = conn.execute(
                sql.TRY_LOCK, {"name": name, "owner": owner, "now": now, "ttl": ttl_seconds}
            ).rowcount
        return bool(changed == 1)

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        _check_ttl(ttl_seconds)
        with self._write() as (conn, now):
            changed = conn.execute(
                sql.RENEW_LOCK, {"name": name, "owner": owner, "now": now, "ttl": ttl_seconds}
            ).rowcount
        return bool(changed == 1)

    def release_lock(self, name: str, owner: str) -> None:
        with self._write() as (conn, _now):
            conn.execute(sql.RELEASE_LOCK, {"name": name, "owner": owner})

    # -- orphan recovery -----------------------------------------------------------------

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        with self._write() as (conn, now):
            rows = conn.execute(sql.SELECT_ORPHANS, {"now": now, "grace": grace_seconds})
            return self._recover(
                conn, now, rows.fetchall(), max_crash_redeliveries, limit, disown=False
            )

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        with self._write() as (conn, now):
            rows = conn.execute(sql.SELECT_NODE_CLAIMS, {"node_id": node_id})
            return self._recover(
                conn, now, rows.fetchall(), max_crash_redeliveries, limit, disown=True
            )

    @staticmethod
    def _recover(
        conn: sqlite3.Connection,
        now: float,
        rows: list[Any],
        max_crash_redeliveries: int,
        limit: int,
        *,
        disown: bool,
    ) -> OrphanRecovery:
        reset = 0
        exhausted: list[tuple[str, int]] = []
        for job_id, claim_seq, crash_count in rows:
            params = {"id": job_id, "claim_seq": claim_seq, "now": now}
            if crash_count >= max_crash_redeliveries:
                if disown:
                    conn.execute(sql.DISOWN_EXHAUSTED, params)
                if len(exhausted) < limit:
                    exhausted.append((job_id, claim_seq))
                continue
            if conn.execute(sql.RESET_ORPHAN, params).rowcount == 1:
                reset += 1
                conn.execute(
                    sql.CLOSE_EXECUTION,
                    {**params, "status": "FAILED", "message": ORPHAN_RECOVERED_MESSAGE},
                )
        return OrphanRecovery(reset=reset, exhausted=tuple(exhausted))

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        with self._write() as (conn, now):
            rows = conn.execute(sql.SELECT_NODE_CLAIMS, {"node_id": node_id}).fetchall()
            released = 0
            for job_id, claim_seq, _crash_count in rows:
                params = {"id": job_id, "claim_seq": claim_seq, "now": now}
                if conn.execute(sql.RELEASE_CLAIM, params).rowcount == 1:
                    released += 1
                    conn.execute(
                        sql.CLOSE_EXECUTION, {**params, "status": "FAILED", "message": message}
                    )
            return released

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        with self._write() as (conn, now):
            return int(
                conn.execute(
                    sql.CLOSE_STALE_EXECUTIONS,
                    {"now": now, "grace": grace_seconds, "message": message, "limit": limit},
                ).rowcount
            )

    # -- recurring -----------------------------------------------------------------------

    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        if job.recurring_id is None:
            raise ValueError(f"Job {job.id!r} has no recurring_id; set it to the recurring id.")
        with self._write() as (conn, now):
            conn.execute("SAVEPOINT recurring_fire")
            try:
                conn.execute(
                    sql.ENQUEUE_FIRE,
                    {
                        "recurring_id": job.recurring_id,
                        "fire_time": _to_epoch(fire_time),
                        "job_id": job.id,
                    },
                )
                self._insert(conn, now, job)
            except (sqlite3.IntegrityError, BusinessKeyConflictError):
                # Fire already recorded, or the previous fire is still active.
                conn.execute("ROLLBACK TO recurring_fire")
                conn.execute("RELEASE recurring_fire")
                return False
            conn.execute("RELEASE recurring_fire")
            return True

    def cancel_by_business_key(self, key: str) -> int:
        with self._write() as (conn, now):
            return int(conn.execute(sql.CANCEL_BY_BUSINESS_KEY, {"key": key, "now": now}).rowcount)

    def cancel_by_tag(self, tag: str) -> int:
        with self._write() as (conn, now):
            return int(conn.execute(sql.CANCEL_BY_TAG, {"tag": tag, "now": now}).rowcount)

    def save_recurring(self, definition: RecurringDefinition) -> None:
        with self._write() as (conn, now):
            conn.execute(
                sql.SAVE_RECURRING,
                {
                    "id": definition.id,
                    "cron": definition.cron,
                    "zone": definition.zone,
                    "misfire": definition.misfire,
                    "name": definition.name,
                    "target": definition.target,
                    "args_json": definition.args_json,
                    "kwargs_json": definition.kwargs_json,
                    "priority": int(definition.priority),
                    "max_retries": definition.max_retries,
                    "backoff": definition.backoff.value,
                    "backoff_ms": definition.backoff_ms,
                    "timeout_seconds": definition.timeout_seconds,
                    "tags_json": json.dumps(list(definition.tags)),
                    "source": definition.source,
                    "now": now,
                },
            )

    def list_recurring(self) -> list[RecurringDefinition]:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_RECURRING).fetchall()
        return [
            RecurringDefinition(
                id=row[0],
                cron=row[1],
                zone=row[2],
                misfire=row[3],
                name=row[4],
                target=row[5],
                args_json=row[6],
                kwargs_json=row[7],
                priority=row[8],
                max_retries=row[9],
                backoff=BackoffPolicy(row[10]),
                backoff_ms=row[11],
                timeout_seconds=row[12],
                tags=tuple(json.loads(row[13])),
                source=row[14],
                created_at=datetime.fromtimestamp(row[15], UTC),
            )
            for row in rows
        ]

    def delete_recurring(self, recurring_id: str) -> bool:
        with self._write() as (conn, _now):
            return bool(conn.execute(sql.DELETE_RECURRING, (recurring_id,)).rowcount == 1)

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        with self._read() as conn:
            row = conn.execute(sql.LAST_FIRE, (recurring_id,)).fetchone()
        return _to_datetime(row[0])

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        with self._write() as (conn, _now):
            changed = conn.execute(
                sql.SKIP_FIRE, {"recurring_id": recurring_id, "fire_time": _to_epoch(fire_time)}
            ).rowcount
        return bool(changed == 1)

    # -- archive -------------------------------------------------------------------------

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        with self._write() as (conn, now):
            ids = conn.execute(
                sql.SELECT_ARCHIVABLE, {"now": now, "age": older_than_seconds, "limit": batch_size}
            ).fetchall()
            for (job_id,) in ids:
                conn.execute(sql.ARCHIVE_JOB, {"id": job_id, "now": now})
                conn.execute(sql.DELETE_TAGS, {"id": job_id})
                conn.execute(sql.DELETE_JOB, {"id": job_id})
            return len(ids)

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        with self._write() as (conn, now):
            return int(
                conn.execute(
                    sql.PURGE_EXECUTIONS,
                    {"now": now, "age": older_than_seconds, "limit": batch_size},
                ).rowcount
            )

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        with self._write() as (conn, now):
            ids = conn.execute(
                sql.SELECT_PURGEABLE, {"now": now, "age": older_than_seconds}
            ).fetchall()
            for (job_id,) in ids:
                conn.execute(sql.DELETE_TAGS, {"id": job_id})
                conn.execute(sql.DELETE_JOB, {"id": job_id})
            return len(ids)


def _lenient_json(text: str, fallback: Any) -> Any:
    """Decode stored JSON for reading; unreadable arguments must not break listings
    (running such a job fails it with the decoding error instead)."""
    try:
        value = json.loads(text)
    except ValueError:
        return fallback
    return value if isinstance(value, type(fallback)) else fallback


def _check_ttl(ttl_seconds: float) -> None:
    if not ttl_seconds > 0:
        raise ValueError(f"Lock TTL {ttl_seconds!r} must be a positive number of seconds.")

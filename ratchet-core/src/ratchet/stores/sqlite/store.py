"""The embedded store: SQLite, persistent, safe for several worker processes on one machine.

Why it is safe across processes: every write runs in ``BEGIN IMMEDIATE``, which takes
SQLite's single write lock before reading, so a claim's read-then-update can never
interleave with another process's claim. WAL mode keeps readers unblocked meanwhile.
Within one process a lock serialises use of the store's one connection.

``memory://`` is the same engine on a private in-memory database: one process, nothing
persisted, every guarantee otherwise identical.

The JobStore methods are the shared SQL layer's (:class:`ratchet.spi.sql.SQLJobStore`,
statements in ``queries.sql``); this module keeps what is SQLite's own: the connection and
its write transaction, file checks, the schema, and the tuned paths (the enqueue with its
idempotency-key table, the claim, a recurring fire under a savepoint).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from ratchet._types import ClaimedJob, NewJob
from ratchet.errors import (
    BusinessKeyConflictError,
    InvalidStoreURLError,
    RatchetError,
    StoreUnavailableError,
)
from ratchet.spi import business_key_held, idempotency_key_used, job_not_stored
from ratchet.spi.sql import (
    Params,
    Row,
    RowEncoder,
    SQLJobStore,
    SQLSession,
    Statements,
    queue_params,
)
from ratchet.stores.sqlite._database import (
    DATA_TABLES,
    SCHEMA_LEDGER,
    Database,
    migrations,
    schema_sql,
)
from ratchet.stores.sqlite._files import DatabaseFile, database_error, require_database_file
from ratchet.stores.sqlite._rows import DECODER
from ratchet.stores.sqlite._statements import (
    STATEMENTS,
    TEST_CLOCK_FUNCTION,
    due_in_queues,
    statements_on_test_clock,
)
from ratchet.stores.sqlite._transactional import SQLiteTransactionalEnqueue

__all__ = ["SQLiteJobStore", "schema_sql"]

T = TypeVar("T")

# Float steps _stored_from may take from its guess to the exact bound (it needs one or two).
_BOUND_STEPS = 64


def _epoch(moment: datetime) -> float:
    return moment.timestamp()


# Times are epoch seconds, durations seconds; tags and params JSON text (as before the
# shared layer: ASCII-escaped, so existing databases read and compare the same).
ENCODER = RowEncoder(
    time=_epoch,
    tags=lambda tags: json.dumps(list(tags)),
    params=json.dumps,
)


class SQLiteSession(SQLSession):
    """Statements inside one write transaction: ``now`` (the transaction's clock reading)
    is added to every statement's parameters."""

    def __init__(
        self, conn: sqlite3.Connection, now: float, statements: Statements = STATEMENTS
    ) -> None:
        super().__init__(statements, lambda name: f":{name}")
        self.conn = conn
        self.now = now

    def execute_text(self, text: str, params: Params) -> int:
        return int(self.conn.execute(text, {**params, "now": self.now}).rowcount)

    def query_text(self, text: str, params: Params) -> list[Row]:
        return self.conn.execute(text, {**params, "now": self.now}).fetchall()


class SQLiteJobStore(SQLiteTransactionalEnqueue, SQLJobStore):
    """JobStore on SQLite. ``path=None`` (or SQLite's ``":memory:"``) keeps everything in
    memory (``memory://``)."""

    statements = STATEMENTS
    decode = DECODER
    encode = ENCODER

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
        if path == ":memory:":  # SQLite's own name for it: never a file of that name
            path = None
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
        self._statements_off_test_clock = self.statements  # see use_test_clock
        self._migrate_on_open(auto_migrate)

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
                now = self._conn.execute(self.statements["now"]).fetchone()[0]
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

    def use_test_clock(self, clock: Callable[[], float] | None) -> None:
        """Read the time from ``clock()`` (epoch seconds) instead of SQLite's clock in
        every statement this store instance runs, until called with ``None``: how
        :mod:`ratchet.testing` moves the clock of its private store. Other instances on
        the same database (``memory://NAME``) keep SQLite's clock. The usual statements
        never call into Python, so a store that is not on a test clock pays nothing."""
        with self._lock:
            self._check_open()
            if clock is None:
                self._conn.create_function(TEST_CLOCK_FUNCTION, 0, None)
                self.statements = self._statements_off_test_clock
                return
            if self.statements is not statements_on_test_clock():
                self._statements_off_test_clock = self.statements
            self._conn.create_function(TEST_CLOCK_FUNCTION, 0, clock)
            self.statements = statements_on_test_clock()

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
                for statement in _statements_of(text):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO ratchet_schema_version (version, name, applied_at) VALUES (?,?,?)",
                    (version, name, now),
                )
                applied.append(name)
        return applied

    # -- the shared layer's primitives ---------------------------------------------------

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        with self._read() as conn:
            return conn.execute(self.statements[name], params or {}).fetchall()

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        return self._transaction(lambda session: session.execute(name, params))

    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        with self._write() as (conn, now):
            return work(SQLiteSession(conn, now, self.statements))

    def _is_unique_violation(self, error: Exception) -> bool:
        return isinstance(error, sqlite3.IntegrityError)

    def _stored_from(self, moment: datetime, what: str) -> Any:
        """Times are float epoch seconds, finer than the microsecond a read rounds them
        to: the stored times that read back as ``moment`` or later start about half a
        microsecond before it. At today's epochs that is two steps of a float, so the
        bound is found exactly: the first float the decoder reads as ``moment`` or later."""
        bound = float(super()._stored_from(moment, what)) - 0.5e-6
        for _ in range(_BOUND_STEPS):  # the guess is off by a step or two at most
            if self.decode.time(bound) < moment:
                break
            bound = math.nextafter(bound, -math.inf)
        for _ in range(_BOUND_STEPS):
            if self.decode.time(bound) >= moment:
                break
            bound = math.nextafter(bound, math.inf)
        return bound

    # -- tuned paths ---------------------------------------------------------------------

    def _insert_jobs(self, jobs: Sequence[NewJob]) -> None:
        with self._write() as (conn, now):
            for job in jobs:
                self._insert(conn, now, job)

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        """Insert one checked job in the transaction open on ``conn`` (clock reading
        ``now``)."""
        self._insert_rows(SQLiteSession(conn, now, self.statements), job)

    def _insert_rows(self, session: SQLSession, job: NewJob) -> None:
        """Insert one checked job in ``session``'s transaction (the store's own, or the
        application's: transactional enqueue). The idempotency key has a table of its own
        (keys outlive their jobs); the business key is a partial unique index over active
        jobs."""
        if job.idempotency_key is not None:
            holder = session.one("select_idempotency_key", {"key": job.idempotency_key})
            if holder is not None:
                raise idempotency_key_used(job.idempotency_key, holder[0])
            session.execute("insert_idempotency_key", {"key": job.idempotency_key, "id": job.id})
        try:
            session.execute("insert_job", self.encode.new_job(job))
        except sqlite3.IntegrityError as exc:
            if job.business_key is not None and "business_key" in str(exc):
                holder = session.one("select_active_business_key", {"key": job.business_key})
                raise business_key_held(job.business_key, holder[0] if holder else None) from exc
            raise job_not_stored([job], str(exc)) from exc
        for tag in job.tags:
            session.execute("insert_tag", {"tag": tag, "id": job.id})

    def _claim(
        self,
        *,
        node_id: str,
        limit: int,
        boost_seconds: float,
        start_now: int,
        queues: Sequence[str] | None,
    ) -> list[ClaimedJob]:
        # Look before taking the one write lock: an idle worker never asks for it, so it
        # never waits on an application transaction that enqueued and holds it.
        with self._read() as conn:
            now = conn.execute(self.statements["now"]).fetchone()[0]
            if not self._candidates(conn, now, 1, 0, queues):
                return []
        with self._write() as (conn, now):
            session = SQLiteSession(conn, now, self.statements)
            claimed: list[ClaimedJob] = []
            for job_id in self._candidates(conn, now, limit, boost_seconds, queues):
                start = len(claimed) < start_now
                row = session.one(
                    "claim_job", {"id": job_id, "node_id": node_id, "start": int(start)}
                )
                if row is None:  # cannot happen under BEGIN IMMEDIATE; kept as a guard
                    continue
                job = self.decode.claimed_job(row, start_recorded=start)
                session.execute(
                    "open_execution",
                    {
                        "id": job.id,
                        "claim_seq": job.claim_seq,
                        "attempt": job.attempt,
                        "node_id": node_id,
                    },
                )
                claimed.append(job)
            return claimed

    @staticmethod
    def _candidates(
        conn: sqlite3.Connection,
        now: float,
        limit: int,
        boost_seconds: float,
        queues: Sequence[str] | None,
    ) -> list[str]:
        """Ids of the first ``limit`` due jobs in claim order (inside the write lock), of
        every queue or of ``queues``; never of a paused queue."""
        params: dict[str, object] = {"now": now, "limit": limit}
        boosted = boost_seconds > 0
        if boosted:
            params["boost"] = boost_seconds
        if queues is None:
            sql = STATEMENTS[
                "claim_candidates_with_boost" if boosted else "claim_candidates_without_boost"
            ]
        else:
            name = (
                "claim_queue_candidates_with_boost"
                if boosted
                else "claim_queue_candidates_without_boost"
            )
            sql = STATEMENTS[name].format(due=due_in_queues(len(queues)))
            params.update(queue_params(queues))
        return [job_id for (job_id,) in conn.execute(sql, params).fetchall()]

    def _insert_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        fire = {
            "recurring_id": job.recurring_id,
            "fire_time": self.encode.moment(fire_time, "Fire time"),
            "job_id": job.id,
        }
        with self._write() as (conn, now):
            conn.execute("SAVEPOINT recurring_fire")
            try:
                SQLiteSession(conn, now, self.statements).execute("enqueue_fire", fire)
                self._insert(conn, now, job)
            except (sqlite3.IntegrityError, BusinessKeyConflictError):
                # Fire already recorded, or the previous fire is still active.
                conn.execute("ROLLBACK TO recurring_fire")
                conn.execute("RELEASE recurring_fire")
                return False
            conn.execute("RELEASE recurring_fire")
            return True


def _statements_of(migration: str) -> list[str]:
    """The statements of a migration file, split at its semicolons once the ``--``
    comment lines are gone (a comment may say "a; b" without ending a statement)."""
    code = "\n".join(line for line in migration.splitlines() if not line.lstrip().startswith("--"))
    return [statement for statement in code.split(";") if statement.strip()]

"""Transactional enqueue on the embedded store: jobs written through the application's own
connection to the same database file.

A job enqueued with :meth:`SQLiteTransactionalEnqueue.enqueue_in` is part of the caller's
transaction: workers see it only after the caller commits, and a rollback removes it.
Accepted connections:

* a ``sqlite3.Connection`` on the store's file;
* when SQLAlchemy is installed, an SQLAlchemy ``Connection`` or ORM ``Session`` on a
  ``sqlite://`` engine for that file (its transaction is begun if none is), and, through
  ``Ratchet.enqueue_in_async``, an ``AsyncConnection`` or ``AsyncSession`` on
  ``sqlite+aiosqlite://``.

SQLite has one writer at a time: from its first insert until the caller commits or rolls
back, the caller's transaction holds the database's write lock, and every other write (the
workers' claims and outcomes, heartbeats) waits for it, up to the store's busy timeout.
Keep transactions that enqueue short. Workers look for due jobs before they ask for the
lock, so an idle worker never waits on an application's transaction.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ratchet._types import NewJob
from ratchet.errors import RatchetError
from ratchet.spi.sql import (
    Params,
    Row,
    SQLSession,
    Statements,
    driver_connection,
    sqlalchemy_dbapi_connection,
)

__all__ = ["CursorSession", "SQLiteTransactionalEnqueue"]

_SAVEPOINT = "ratchet_enqueue"


class CursorSession(SQLSession):
    """Statements on any DB-API connection to SQLite (the driver's, or SQLAlchemy's
    asyncio adapter of aiosqlite), ``now`` added to every statement's parameters."""

    def __init__(self, conn: Any, now: float, statements: Statements) -> None:
        super().__init__(statements, lambda name: f":{name}")
        self.conn = conn
        self.now = now

    def execute_text(self, text: str, params: Params) -> int:
        cursor = self.conn.cursor()
        try:
            cursor.execute(text, {**params, "now": self.now})
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def query_text(self, text: str, params: Params) -> list[Row]:
        cursor = self.conn.cursor()
        try:
            cursor.execute(text, {**params, "now": self.now})
            return list(cursor.fetchall())
        finally:
            cursor.close()


class SQLiteTransactionalEnqueue:
    """Mixin of :class:`~ratchet.stores.sqlite.store.SQLiteJobStore`: the capability
    ``SupportsTransactionalEnqueue``."""

    path: str | None
    statements: Statements

    if TYPE_CHECKING:  # supplied by the store (stubs here would shadow them in the MRO)

        def describe(self) -> str: ...

        def _check_new_jobs(self, jobs: Sequence[NewJob]) -> None: ...

        def _insert_rows(self, session: SQLSession, job: NewJob) -> None: ...

    def enqueue_in(self, connection: Any, job: NewJob) -> None:
        """Insert ``job`` inside the transaction open on ``connection``; the caller commits.

        Same checks and errors as ``enqueue``. A savepoint makes the insert all-or-nothing:
        on a key conflict it is rolled back and the error raised, and the caller's
        transaction stays usable. A connection with no transaction open gets one begun
        (the caller's ``commit()`` ends it), except an autocommit one
        (``isolation_level=None``), which has nothing to join: the job is committed at once.
        """
        self.enqueue_many_in(connection, [job])

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        """Insert ``jobs`` all-or-nothing inside the transaction open on ``connection``."""
        self._check_new_jobs(jobs)
        self._check_reachable()
        if not jobs:
            return
        dbapi = _dbapi_connection(connection)
        driver = driver_connection(dbapi)
        self._check_same_database(dbapi)
        begin_here = not bool(getattr(driver, "in_transaction", False))
        commit_here = begin_here and getattr(driver, "isolation_level", "") is None
        now = CursorSession(dbapi, 0.0, self.statements).one("now")
        assert now is not None  # a SELECT without FROM always returns one row
        session = CursorSession(dbapi, float(now[0]), self.statements)
        if begin_here:
            # Python's sqlite3 opens a transaction only before its first INSERT, and a
            # SAVEPOINT outside a transaction would commit at its RELEASE: open it first.
            session.execute_text("BEGIN IMMEDIATE" if commit_here else "BEGIN", {})
        session.execute_text(f"SAVEPOINT {_SAVEPOINT}", {})
        try:
            for job in jobs:
                self._insert_rows(session, job)
        except BaseException:
            session.execute_text(f"ROLLBACK TO {_SAVEPOINT}", {})
            session.execute_text(f"RELEASE {_SAVEPOINT}", {})
            if commit_here:
                session.execute_text("ROLLBACK", {})
            raise
        session.execute_text(f"RELEASE {_SAVEPOINT}", {})
        if commit_here:
            session.execute_text("COMMIT", {})

    def _check_reachable(self) -> None:
        if self.path is None:
            raise RatchetError(
                f"The store {self.describe()} is in memory: no other connection can reach "
                "its database. Use a sqlite:/// file store for transactional enqueue."
            )

    def _check_same_database(self, dbapi: Any) -> None:
        """Refuse a connection to another database than the store's: its jobs would never
        reach the workers."""
        rows = CursorSession(dbapi, 0.0, self.statements).query_text("PRAGMA database_list", {})
        files = [str(row[2]) for row in rows if row[1] == "main"]
        here = os.path.realpath(self.path or "")
        if not files or not files[0] or os.path.realpath(files[0]) != here:
            other = files[0] if files and files[0] else "an in-memory database"
            raise RatchetError(
                f"The connection is to {other!r}, "
                f"not to the store's file {here!r}: jobs written there would never reach "
                "the workers. Connect to the store's file."
            )


def _dbapi_connection(connection: Any) -> Any:
    """The DB-API connection behind ``connection`` (sqlite3 or SQLAlchemy)."""
    if isinstance(connection, sqlite3.Connection):
        return connection
    dbapi = sqlalchemy_dbapi_connection(connection)
    if dbapi is not None:
        module = type(driver_connection(dbapi)).__module__
        if not module.startswith(("sqlite3", "aiosqlite")):
            raise TypeError(
                f"The SQLAlchemy connection uses the driver {module!r}; the SQLite store "
                "enqueues through sqlite3 or aiosqlite. Create the engine with a sqlite:/// "
                "(or sqlite+aiosqlite:///) URL for the store's file."
            )
        return dbapi
    raise TypeError(
        f"Cannot enqueue through {type(connection).__name__!r}: pass a sqlite3.Connection "
        "to the store's file, or an SQLAlchemy Connection or Session on a sqlite:/// engine."
    )

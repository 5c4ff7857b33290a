"""Transactional enqueue: jobs written through the application's own connection.

A job enqueued with :meth:`TransactionalEnqueue.enqueue_in` is part of the caller's
transaction: it becomes visible to workers only when the caller commits, and vanishes if
the caller rolls back ("transactional outbox" without an outbox). Accepted connections:

* a PyMySQL :class:`pymysql.connections.Connection` (autocommit or not);
* when SQLAlchemy is installed, an SQLAlchemy ``Connection`` or ORM ``Session`` whose
  driver is PyMySQL (``mysql+pymysql://``); the statements run on its DBAPI connection,
  inside the transaction SQLAlchemy has begun (one is begun if none has).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import pymysql
from pymysql.connections import Connection
from pymysql.constants import SERVER_STATUS

from ratchet.errors import RatchetError
from ratchet.spi import NewJob, SupportsTransactionalEnqueue
from ratchet_store_mysql._enqueue import KeyConflict, check_batch, conflict_error, insert_jobs
from ratchet_store_mysql._pool import PooledStore, rollback_quietly

__all__ = ["SupportsTransactionalEnqueue", "TransactionalEnqueue", "pymysql_connection"]

_SAVEPOINT = "ratchet_enqueue"


class TransactionalEnqueue(PooledStore):
    """Mixin of :class:`~ratchet_store_mysql.MySQLJobStore`: the capability above."""

    def enqueue_in(self, connection: Any, job: NewJob) -> None:
        """Insert ``job`` inside the transaction open on ``connection``; the caller commits.

        Same checks and errors as :meth:`JobStore.enqueue <ratchet.spi.JobQueue.enqueue>`.
        On a key conflict the insert is rolled back to a savepoint and the error is raised;
        the caller's transaction stays usable. Workers see the job after the caller's
        commit; a rollback removes it with everything else. An autocommit connection
        outside a transaction has nothing to join: the job is committed at once. A deadlock
        inside the caller's transaction makes InnoDB roll that whole transaction back: the
        driver's error is raised as it is, for the caller to retry its transaction.
        """
        self.enqueue_many_in(connection, [job])

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        """Insert ``jobs`` all-or-nothing inside the transaction open on ``connection``."""
        conn = pymysql_connection(connection)
        check_batch(jobs)
        if not jobs:
            return
        charset = str(getattr(conn, "charset", ""))
        if not charset.startswith("utf8mb4"):
            raise RatchetError(
                f"The connection uses the character set {charset!r}; transactional enqueue "
                "needs utf8mb4 (PyMySQL's default: pass charset='utf8mb4', or "
                "?charset=utf8mb4 in an SQLAlchemy URL)."
            )

        def lookup(statement: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
            # The caller's transaction first (a holder it inserted itself), then committed
            # data on the store's own connection (the caller's snapshot may be older).
            with conn.cursor() as cursor:
                cursor.execute(statement, params)
                row: tuple[Any, ...] | None = cursor.fetchone()
            return row if row is not None else self._one(statement, params)

        # The status flags of the server's last reply (public in PyMySQL, not in its stubs).
        status = int(getattr(conn, "server_status", 0) or 0)
        in_transaction = bool(status & SERVER_STATUS.SERVER_STATUS_IN_TRANS)
        try:
            if conn.get_autocommit() and not in_transaction:
                _insert_in_own_transaction(conn, jobs)
            else:
                _insert_under_savepoint(conn, jobs)
        except KeyConflict as conflict:
            raise conflict_error(lookup, jobs, conflict) from conflict.error


def _insert_in_own_transaction(conn: Connection[Any], jobs: Sequence[NewJob]) -> None:
    conn.begin()
    try:
        with conn.cursor() as cursor:
            insert_jobs(cursor, jobs)
        conn.commit()
    except BaseException:
        rollback_quietly(conn)
        raise


def _insert_under_savepoint(conn: Connection[Any], jobs: Sequence[NewJob]) -> None:
    # With autocommit off and no transaction yet, the SAVEPOINT statement itself starts the
    # caller's transaction: the jobs then live or die with it.
    with conn.cursor() as cursor:
        cursor.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            insert_jobs(cursor, jobs)
        except BaseException:
            # After a deadlock the transaction (and the savepoint) is already gone.
            with contextlib.suppress(pymysql.err.Error):
                cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                cursor.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            raise
        cursor.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")


def pymysql_connection(connection: Any) -> Connection[Any]:
    """The PyMySQL connection behind ``connection`` (PyMySQL or SQLAlchemy).

    For SQLAlchemy, begins the Connection's or Session's transaction if none is active,
    so the caller's ``commit()`` commits the jobs and ``rollback()`` discards them.
    """
    if isinstance(connection, Connection):
        return connection
    dbapi = _sqlalchemy_dbapi_connection(connection)
    if isinstance(dbapi, Connection):
        return dbapi
    if dbapi is not None:
        raise TypeError(
            f"The SQLAlchemy connection uses the driver {type(dbapi).__module__!r}; "
            "transactional enqueue needs PyMySQL. Create the engine with a "
            "mysql+pymysql:// URL."
        )
    raise TypeError(
        f"Cannot enqueue through {type(connection).__name__!r}: pass a "
        "pymysql.connections.Connection, or an SQLAlchemy Connection or Session on a "
        "mysql+pymysql:// engine."
    )


def _sqlalchemy_dbapi_connection(connection: Any) -> object | None:
    try:
        from sqlalchemy.engine import Connection as SAConnection
        from sqlalchemy.orm import Session
    except ImportError:  # SQLAlchemy is optional
        return None
    if isinstance(connection, Session):
        connection = connection.connection()  # begins the session's transaction if needed
    if not isinstance(connection, SAConnection):
        return None
    if not connection.in_transaction():
        connection.begin()
    return connection.connection.dbapi_connection

"""Transactional enqueue: jobs written through the application's own connection.

A job enqueued with :meth:`TransactionalEnqueue.enqueue_in` is part of the caller's
transaction: it becomes visible to workers only when the caller commits, and vanishes if
the caller rolls back ("transactional outbox" without an outbox). Accepted connections:

* a PyMySQL :class:`pymysql.connections.Connection` (autocommit or not);
* when SQLAlchemy is installed, an SQLAlchemy ``Connection`` or ORM ``Session`` whose
  driver is PyMySQL (``mysql+pymysql://``); the statements run on its DBAPI connection,
  inside the transaction SQLAlchemy has begun (one is begun if none has);
* the same inside ``run_sync`` of an ``AsyncConnection`` or ``AsyncSession`` on
  ``mysql+aiomysql://`` (what ``Ratchet.enqueue_in_async`` does): the DBAPI connection is
  then SQLAlchemy's asyncio adapter around an aiomysql connection, driven through
  :class:`AwaitedAioMySQL`. aiomysql is PyMySQL's protocol and errors made async.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import pymysql
from pymysql.connections import Connection
from pymysql.constants import SERVER_STATUS

from ratchet.errors import RatchetError
from ratchet.spi import NewJob, SupportsTransactionalEnqueue
from ratchet.spi.sql import driver_connection, sqlalchemy_dbapi_connection
from ratchet_store_mysql._enqueue import KeyConflict, conflict_error, insert_jobs
from ratchet_store_mysql._pool import PooledStore, rollback_quietly

__all__ = [
    "AwaitedAioMySQL",
    "SupportsTransactionalEnqueue",
    "TransactionalEnqueue",
    "pymysql_connection",
]

_SAVEPOINT = "ratchet_enqueue"


class TransactionalEnqueue(PooledStore):
    """Mixin of :class:`~ratchet_store_mysql.MySQLJobStore`: the capability above."""

    if TYPE_CHECKING:  # supplied by the store's SQLJobStore (a stub here would shadow it)

        def _check_new_jobs(self, jobs: Sequence[NewJob]) -> None: ...

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
        self._check_new_jobs(jobs)
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
    so the caller's ``commit()`` commits the jobs and ``rollback()`` discards them. On an
    async engine (inside ``run_sync``) the result is an :class:`AwaitedAioMySQL` in the
    PyMySQL ``Connection``'s place.
    """
    if isinstance(connection, Connection):
        return connection
    dbapi = sqlalchemy_dbapi_connection(connection)
    if isinstance(dbapi, Connection):
        return dbapi
    if dbapi is not None:
        driver = driver_connection(dbapi)
        aiomysql = sys.modules.get("aiomysql")  # imported if the engine uses it
        if aiomysql is not None and isinstance(driver, aiomysql.Connection):
            # It answers every call enqueue_many_in makes on a PyMySQL Connection.
            return cast("Connection[Any]", AwaitedAioMySQL(dbapi, driver))
        raise TypeError(
            f"The SQLAlchemy connection uses the driver {type(driver).__module__!r}; "
            "transactional enqueue needs PyMySQL (or aiomysql on an async engine). Create "
            "the engine with a mysql+pymysql:// URL (create_async_engine: mysql+aiomysql://)."
        )
    raise TypeError(
        f"Cannot enqueue through {type(connection).__name__!r}: pass a "
        "pymysql.connections.Connection, or an SQLAlchemy Connection or Session on a "
        "mysql+pymysql:// engine."
    )


class AwaitedAioMySQL:
    """The part of PyMySQL's ``Connection`` that :meth:`TransactionalEnqueue.enqueue_many_in`
    uses, on the aiomysql connection behind SQLAlchemy's asyncio adapter.

    Cursors, commit and rollback are the adapter's DB-API facade, the way SQLAlchemy runs
    its own statements (PyMySQL's errors, as aiomysql raises them); ``begin()``, which the
    facade lacks, is aiomysql's, awaited with the adapter's ``run_async``; the status flags
    and the character set are read from the driver (no round trip). Only valid inside
    ``run_sync``.
    """

    def __init__(self, adapted: Any, driver: Any) -> None:
        self._adapted = adapted
        self._driver = driver

    @property
    def charset(self) -> str:
        return str(self._driver.charset)

    @property
    def server_status(self) -> int:
        return int(self._driver.server_status or 0)

    def get_autocommit(self) -> bool:
        return bool(self._driver.get_autocommit())

    def cursor(self) -> Any:
        """A DB-API cursor (a context manager, as PyMySQL's)."""
        return self._adapted.cursor()

    def begin(self) -> None:
        self._adapted.run_async(lambda driver: driver.begin())

    def commit(self) -> None:
        self._adapted.commit()

    def rollback(self) -> None:
        self._adapted.rollback()

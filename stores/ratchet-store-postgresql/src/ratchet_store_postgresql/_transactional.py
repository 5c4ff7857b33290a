"""Transactional enqueue: jobs written through the application's own connection.

A job enqueued with :meth:`TransactionalEnqueue.enqueue_in` is part of the caller's
transaction: it becomes visible to workers only when the caller commits, and vanishes if
the caller rolls back ("transactional outbox" without an outbox). Accepted connections:

* a psycopg 3 :class:`psycopg.Connection` (autocommit or not);
* when SQLAlchemy is installed, an SQLAlchemy ``Connection`` or ORM ``Session`` whose
  driver is psycopg 3 (``postgresql+psycopg://``); the statements run on its DBAPI
  connection, inside the transaction SQLAlchemy has begun (one is begun if none has);
* the same inside ``run_sync`` of an ``AsyncConnection`` or ``AsyncSession`` (what
  ``Ratchet.enqueue_in_async`` does): the DBAPI connection is then SQLAlchemy's asyncio
  adapter around a ``psycopg.AsyncConnection``, driven through :class:`AwaitedPsycopg`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, TypeVar, cast

import psycopg

from ratchet.spi import NewJob, SupportsTransactionalEnqueue
from ratchet.spi.sql import driver_connection, sqlalchemy_dbapi_connection
from ratchet_store_postgresql._enqueue import enqueue_in_transaction
from ratchet_store_postgresql._hints import EnqueueHints

__all__ = [
    "AwaitedPsycopg",
    "SupportsTransactionalEnqueue",
    "TransactionalEnqueue",
    "psycopg_connection",
]


class TransactionalEnqueue(EnqueueHints):
    """Mixin of :class:`~ratchet_store_postgresql.PostgreSQLJobStore`: the capability above."""

    def enqueue_in(self, connection: Any, job: NewJob) -> None:
        """Insert ``job`` inside the transaction open on ``connection``; the caller commits.

        Same checks and errors as :meth:`JobStore.enqueue
        <ratchet.spi.JobQueue.enqueue>`. On a key conflict the insert is rolled back to a
        savepoint and the error is raised; the caller's transaction stays usable. Workers
        see the job after the caller's commit; a rollback removes it with everything else.
        An autocommit psycopg connection outside a transaction has nothing to join: the
        job is committed at once.
        """
        enqueue_in_transaction(psycopg_connection(connection), [job], self._hint_for([job]))

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        """Insert ``jobs`` all-or-nothing inside the transaction open on ``connection``."""
        enqueue_in_transaction(psycopg_connection(connection), jobs, self._hint_for(jobs))


def psycopg_connection(connection: Any) -> psycopg.Connection[Any]:
    """The psycopg 3 connection behind ``connection`` (psycopg or SQLAlchemy).

    For SQLAlchemy, begins the Connection's or Session's transaction if none is active,
    so the caller's ``commit()`` commits the jobs and ``rollback()`` discards them. On an
    async engine (inside ``run_sync``) the result is an :class:`AwaitedPsycopg` in the
    psycopg ``Connection``'s place.
    """
    if isinstance(connection, psycopg.Connection):
        return connection
    dbapi = sqlalchemy_dbapi_connection(connection)
    if isinstance(dbapi, psycopg.Connection):
        return dbapi
    if dbapi is not None:
        driver = driver_connection(dbapi)
        if isinstance(driver, psycopg.AsyncConnection):
            # It answers every call enqueue_in_transaction makes on a psycopg Connection.
            return cast("psycopg.Connection[Any]", AwaitedPsycopg(dbapi, driver))
        raise TypeError(
            f"The SQLAlchemy connection uses the driver {type(driver).__module__!r}; "
            "transactional enqueue needs psycopg 3. Create the engine with a "
            "postgresql+psycopg:// URL."
        )
    raise TypeError(
        f"Cannot enqueue through {type(connection).__name__!r}: pass a psycopg.Connection, "
        "or an SQLAlchemy Connection or Session on a postgresql+psycopg:// engine."
    )


T = TypeVar("T")


class AwaitedPsycopg:
    """The part of psycopg's ``Connection`` that :func:`enqueue_in_transaction` uses
    (``execute``, ``info``, ``autocommit``, ``transaction()``, ``cursor().copy()``), on
    the ``psycopg.AsyncConnection`` behind SQLAlchemy's asyncio adapter.

    Statements go through the adapter's DB-API facade, the way SQLAlchemy runs its own;
    the transaction block and COPY, which the facade lacks, are psycopg's async twins of
    the sync calls, awaited with the adapter's ``run_async``. So the async path sends the
    same statements, savepoint and NOTIFY as the sync one. Only valid inside ``run_sync``.
    """

    def __init__(self, adapted: Any, driver: psycopg.AsyncConnection[Any]) -> None:
        self._adapted = adapted
        self._driver = driver

    def _await(self, awaitable: Awaitable[T]) -> T:
        result: T = self._adapted.run_async(lambda _driver: awaitable)
        return result

    @property
    def info(self) -> psycopg.ConnectionInfo:
        return self._driver.info  # read from libpq's state: no round trip

    @property
    def autocommit(self) -> bool:
        return self._driver.autocommit

    def execute(self, query: Any, params: Any = None) -> Any:
        """Run ``query``; a cursor holding its rows (``fetchone()``)."""
        return self._adapted.execute(query, params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with _entered(self._driver.transaction(), self._await):
            yield

    @contextmanager
    def cursor(self) -> Iterator[_AwaitedCursor]:
        cursor = self._driver.cursor()
        try:
            yield _AwaitedCursor(cursor, self._await)
        finally:
            self._await(cursor.close())


class _AwaitedCursor:
    def __init__(self, cursor: psycopg.AsyncCursor[Any], run: Callable[[Awaitable[Any]], Any]):
        self._cursor = cursor
        self._run = run

    @contextmanager
    def copy(self, statement: Any) -> Iterator[_AwaitedCopy]:
        with _entered(self._cursor.copy(statement), self._run) as copy:
            yield _AwaitedCopy(copy, self._run)


class _AwaitedCopy:
    def __init__(self, copy: psycopg.AsyncCopy, run: Callable[[Awaitable[Any]], Any]) -> None:
        self._copy = copy
        self._run = run

    def set_types(self, types: Sequence[int | str]) -> None:
        self._copy.set_types(types)

    def write_row(self, row: Sequence[Any]) -> None:
        self._run(self._copy.write_row(row))


@contextmanager
def _entered(
    manager: AbstractAsyncContextManager[T], run: Callable[[Awaitable[Any]], Any]
) -> Iterator[T]:
    """``async with manager`` from synchronous code, each step awaited with ``run``."""
    value: T = run(manager.__aenter__())
    try:
        yield value
    except BaseException as exc:
        if not run(manager.__aexit__(type(exc), exc, exc.__traceback__)):
            raise
    else:
        run(manager.__aexit__(None, None, None))

"""Transactional enqueue: jobs written through the application's own connection.

A job enqueued with :meth:`TransactionalEnqueue.enqueue_in` is part of the caller's
transaction: it becomes visible to workers only when the caller commits, and vanishes if
the caller rolls back ("transactional outbox" without an outbox). Accepted connections:

* a psycopg 3 :class:`psycopg.Connection` (autocommit or not);
* when SQLAlchemy is installed, an SQLAlchemy ``Connection`` or ORM ``Session`` whose
  driver is psycopg 3 (``postgresql+psycopg://``); the statements run on its DBAPI
  connection, inside the transaction SQLAlchemy has begun (one is begun if none has).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ratchet.spi import NewJob, SupportsTransactionalEnqueue
from ratchet_store_postgresql._enqueue import enqueue_in_transaction
from ratchet_store_postgresql._hints import EnqueueHints

__all__ = ["SupportsTransactionalEnqueue", "TransactionalEnqueue", "psycopg_connection"]


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
    so the caller's ``commit()`` commits the jobs and ``rollback()`` discards them.
    """
    if isinstance(connection, psycopg.Connection):
        return connection
    dbapi = _sqlalchemy_dbapi_connection(connection)
    if isinstance(dbapi, psycopg.Connection):
        return dbapi
    if dbapi is not None:
        raise TypeError(
            f"The SQLAlchemy connection uses the driver {type(dbapi).__module__!r}; "
            "transactional enqueue needs psycopg 3. Create the engine with a "
            "postgresql+psycopg:// URL."
        )
    raise TypeError(
        f"Cannot enqueue through {type(connection).__name__!r}: pass a psycopg.Connection, "
        "or an SQLAlchemy Connection or Session on a postgresql+psycopg:// engine."
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

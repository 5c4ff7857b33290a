"""The DB-API connection behind an application's SQLAlchemy objects (public SPI).

A store with transactional enqueue (``SupportsTransactionalEnqueue``) accepts the
application's SQLAlchemy ``Connection`` or ORM ``Session`` and runs its statements on the
DB-API connection behind it, inside the transaction SQLAlchemy has begun, so that the
application's ``commit()`` and ``rollback()`` decide: :func:`sqlalchemy_dbapi_connection`.

Async applications hold an ``AsyncConnection`` or ``AsyncSession`` instead.
:func:`run_with_sync_connection` calls a store's synchronous ``enqueue_in`` through
SQLAlchemy's documented bridge, ``run_sync``: the store receives the sync ``Connection`` or
``Session`` behind the async one, and the same unwrapping applies. The DB-API connection
is then SQLAlchemy's asyncio adapter (``sqlalchemy.engine.AdaptedConnection``): a DB-API
facade whose calls are awaited on the application's event loop. A store uses that facade
for its statements, and for what the facade lacks reaches the asyncio driver's own
connection (:func:`driver_connection`), awaiting its coroutines with the adapter's
``run_async``.

Nothing here depends on the driver, so any SQLAlchemy dialect unwraps the same way
(psycopg, PyMySQL, sqlite3, and their asyncio twins psycopg, aiomysql, aiosqlite).
SQLAlchemy is optional: it is imported only when one of these functions runs, and without
it nothing is an SQLAlchemy object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["driver_connection", "run_with_sync_connection", "sqlalchemy_dbapi_connection"]

T = TypeVar("T")


def sqlalchemy_dbapi_connection(connection: object) -> Any | None:
    """The DB-API connection behind a sync SQLAlchemy ``Connection`` or ORM ``Session``,
    its transaction begun; ``None`` for any other object, or without SQLAlchemy.

    An active transaction is joined, never committed or rolled back here. A ``Session``
    begins its transaction in ``Session.connection()``; a ``Connection`` with none active
    gets ``begin()``. Either way the caller's ``commit()`` commits what the store writes
    and ``rollback()`` discards it. On an async engine (inside ``run_sync``) the result is
    SQLAlchemy's asyncio adapter; :func:`driver_connection` reaches the driver behind it.

    Raises ``TypeError`` for an ``AsyncConnection`` or ``AsyncSession``: synchronous code
    cannot use them; they go through :func:`run_with_sync_connection`.
    """
    try:
        from sqlalchemy.engine import Connection
        from sqlalchemy.orm import Session
    except ImportError:  # SQLAlchemy is optional
        return None
    if isinstance(connection, Session):
        connection = connection.connection()  # begins the session's transaction if needed
    if not isinstance(connection, Connection):
        if _is_async(connection):
            raise TypeError(
                f"An SQLAlchemy {type(connection).__name__} cannot be used from synchronous "
                "code: use `await app.enqueue_in_async(connection, ...)` (or call the store "
                "inside `await connection.run_sync(...)`)."
            )
        return None
    if not connection.in_transaction():
        connection.begin()
    return connection.connection.dbapi_connection


def driver_connection(dbapi_connection: object) -> Any:
    """The driver's own connection behind ``dbapi_connection``.

    For SQLAlchemy's asyncio adapter that is the asyncio driver's connection (for
    example a ``psycopg.AsyncConnection`` or an ``aiomysql.Connection``), whose coroutines
    a store awaits from synchronous code with the adapter's
    ``run_async(lambda driver: ...)``, only while inside ``run_sync``. Any other object
    (a sync driver's connection) is returned unchanged.
    """
    try:
        from sqlalchemy.engine import AdaptedConnection
    except ImportError:  # SQLAlchemy is optional
        return dbapi_connection
    if isinstance(dbapi_connection, AdaptedConnection):
        return dbapi_connection.driver_connection
    return dbapi_connection


async def run_with_sync_connection(connection: object, fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(sync, *args)``, where ``sync`` is the sync ``Connection`` behind an SQLAlchemy
    ``AsyncConnection``, or the sync ``Session`` behind an ``AsyncSession``.

    ``fn`` runs through SQLAlchemy's ``run_sync``: its database calls on ``sync`` (and on
    the DB-API connection behind it) are awaited on the running event loop, within the
    caller's transaction. Raises ``TypeError`` for any other object, naming it.
    """
    try:
        from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
    except ImportError:  # SQLAlchemy is optional
        pass
    else:
        if isinstance(connection, AsyncConnection | AsyncSession):
            return await connection.run_sync(fn, *args)
    raise TypeError(
        f"Cannot enqueue asynchronously through {type(connection).__name__!r}: pass an "
        "SQLAlchemy AsyncConnection or AsyncSession (from create_async_engine). For a sync "
        "Connection, Session or driver connection use enqueue_in."
    )


def _is_async(connection: object) -> bool:
    try:
        from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
    except ImportError:
        return False
    return isinstance(connection, AsyncConnection | AsyncSession)

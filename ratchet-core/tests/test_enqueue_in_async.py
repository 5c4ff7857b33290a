"""``Ratchet.enqueue_in_async`` / ``enqueue_many_in_async`` refusals, and the shared
SQLAlchemy unwrapping helper (``ratchet.spi.sql._sqlalchemy``) on sqlite3.

What they do on a real database (commit, rollback, conflicts, hints) is tested by the
PostgreSQL and MySQL stores (``tests/test_async_transactional_enqueue.py``), on async
engines; no async driver is needed here.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from ratchet import Ratchet, RatchetError
from ratchet.spi import NewJob, SupportsTransactionalEnqueue
from ratchet.spi.sql._sqlalchemy import driver_connection, sqlalchemy_dbapi_connection
from ratchet.stores.sqlite.store import SQLiteJobStore


class WithoutTransactionalEnqueue(SQLiteJobStore):
    """The embedded store with the capability switched off (a Protocol member set to
    ``None`` is not implemented), whatever the embedded store offers."""

    enqueue_in = None
    enqueue_many_in = None


class RecordingTransactionalStore(SQLiteJobStore):
    """Claims the capability and records every connection it is handed (storing the jobs
    on its own, committed), so a test sees whether the store was reached at all."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: list[object] = []

    def enqueue_in(self, connection: Any, job: NewJob) -> None:
        self.connections.append(connection)
        self.enqueue(job)

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        self.connections.append(connection)
        self.enqueue_many(jobs)


def open_app(store: SQLiteJobStore) -> Ratchet:
    app = Ratchet(store, coordinator="none")

    @app.job(name="shop.ship")
    def ship(order: int) -> None: ...

    return app


@pytest.fixture
def recording() -> Iterator[tuple[Ratchet, RecordingTransactionalStore]]:
    store = RecordingTransactionalStore.from_url("sqlite:///:memory:")
    assert isinstance(store, RecordingTransactionalStore)
    assert isinstance(store, SupportsTransactionalEnqueue)
    app = open_app(store)
    yield app, store
    app.close()


def test_a_store_without_transactional_enqueue_is_refused() -> None:
    """Both methods raise the capability error before touching the connection; nothing
    is stored. Look at ``Ratchet._transactional_store``."""
    store = WithoutTransactionalEnqueue.from_url("sqlite:///:memory:")
    assert not isinstance(store, SupportsTransactionalEnqueue)
    app = open_app(store)
    try:
        with pytest.raises(RatchetError, match="cannot enqueue inside your transaction"):
            asyncio.run(app.enqueue_in_async(object(), "shop.ship", 1))
        with pytest.raises(RatchetError, match="cannot enqueue inside your transaction"):
            asyncio.run(app.enqueue_many_in_async(object(), "shop.ship", [(1,), (2,)]))
        assert app.list_jobs() == []
    finally:
        app.close()


def test_objects_that_are_not_async_sqlalchemy_are_refused(
    recording: tuple[Ratchet, RecordingTransactionalStore],
) -> None:
    """A plain object, a sqlite3 connection and a sync SQLAlchemy Session are not
    awaitable transactions: TypeError naming the type and pointing to ``enqueue_in``, and
    the store is never called. Look at ``run_with_sync_connection``."""
    app, store = recording
    refused: list[object] = [object(), sqlite3.connect(":memory:")]
    orm = pytest.importorskip("sqlalchemy.orm")
    refused.append(orm.Session())
    for connection in refused:
        name = type(connection).__name__
        with pytest.raises(TypeError, match=rf"'{name}'.*AsyncSession.*enqueue_in"):
            asyncio.run(app.enqueue_in_async(connection, "shop.ship", 1))
        with pytest.raises(TypeError, match=rf"'{name}'"):
            asyncio.run(app.enqueue_many_in_async(connection, "shop.ship", [(1,)]))
    assert store.connections == []
    assert app.list_jobs() == []


def test_the_arguments_are_checked_before_the_connection(
    recording: tuple[Ratchet, RecordingTransactionalStore],
) -> None:
    """Same application checks as ``enqueue_in``: a bad argument fails first."""
    app, store = recording
    with pytest.raises(RatchetError, match="JSON"):
        asyncio.run(app.enqueue_in_async(object(), "shop.ship", object()))
    assert asyncio.run(app.enqueue_many_in_async(object(), "shop.ship", [])) == []
    assert store.connections == []


def test_the_helper_begins_the_transaction_of_a_sync_connection_or_session() -> None:
    """On a sync engine the DB-API connection is the driver's own (sqlite3 here) and the
    Connection's or Session's transaction is begun, so the caller's commit decides; a
    transaction already begun is joined. Anything else is ``None``."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    orm = pytest.importorskip("sqlalchemy.orm")
    engine = sqlalchemy.create_engine("sqlite://")
    with engine.connect() as conn:
        assert not conn.in_transaction()
        dbapi = sqlalchemy_dbapi_connection(conn)
        assert isinstance(dbapi, sqlite3.Connection)
        assert conn.in_transaction()
        begun = conn.get_transaction()
        assert sqlalchemy_dbapi_connection(conn) is dbapi
        assert conn.get_transaction() is begun
        assert driver_connection(dbapi) is dbapi
    with orm.Session(engine) as session:
        assert not session.in_transaction()
        assert isinstance(sqlalchemy_dbapi_connection(session), sqlite3.Connection)
        assert session.in_transaction()
    for other in (object(), sqlite3.connect(":memory:")):
        assert sqlalchemy_dbapi_connection(other) is None
        assert driver_connection(other) is other
    engine.dispose()


def test_the_helper_refuses_async_objects_in_sync_code() -> None:
    """An AsyncSession handed to a sync ``enqueue_in`` cannot be awaited there: the error
    says to use ``enqueue_in_async``."""
    asyncio_extension = pytest.importorskip("sqlalchemy.ext.asyncio")
    with pytest.raises(TypeError, match=r"AsyncSession.*enqueue_in_async"):
        sqlalchemy_dbapi_connection(asyncio_extension.AsyncSession())

"""Transactional enqueue: a job written through the caller's connection lives or dies with
the caller's transaction, and is invisible to workers until the commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pymysql
import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet.spi import JobStatus
from ratchet_store_mysql import MySQLJobStore, SupportsTransactionalEnqueue
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server


def claimable(store: MySQLJobStore) -> list[str]:
    """Ids a worker on another connection can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="worker", limit=100, priority_boost_seconds=0)
    return [job.id for job in claimed]


@pytest.fixture
def connect(mysql_url: str) -> Iterator[Callable[..., pymysql.connections.Connection[Any]]]:
    """Opens the application's own PyMySQL connections (PyMySQL defaults: autocommit off,
    utf8mb4, the server's isolation level); closes them after the test."""
    opened: list[pymysql.connections.Connection[Any]] = []
    kwargs = dict(parse_store_url(mysql_url).connect_kwargs)

    def open_connection(**overrides: Any) -> pymysql.connections.Connection[Any]:
        conn = pymysql.connect(**{**kwargs, **overrides})
        opened.append(conn)
        return conn

    yield open_connection
    for conn in opened:
        if conn.open:
            conn.close()


def test_the_store_declares_the_capability(store: MySQLJobStore) -> None:
    assert isinstance(store, SupportsTransactionalEnqueue)


def test_job_appears_only_when_the_caller_commits(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """Inside an open transaction the job is invisible to a worker; after the commit it is
    claimable, together with the caller's own write."""
    job = new_job(tags=("outbox",))
    conn = connect()
    with conn.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE orders (id INT)")
        cursor.execute("INSERT INTO orders VALUES (1)")
    store.enqueue_in(conn, job)
    assert store.get_job(job.id) is None
    assert claimable(store) == []
    conn.commit()
    assert claimable(store) == [job.id]
    assert store.get_job(job.id).tags == ("outbox",)  # type: ignore[union-attr]


def test_job_vanishes_when_the_caller_rolls_back(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """A rollback removes the job, its tags and its idempotency key: the key is free."""
    job = new_job(idempotency_key="order-7", business_key="order-7", tags=("t",))
    conn = connect()
    store.enqueue_many_in(conn, [job, new_job()])
    conn.rollback()
    assert store.get_job(job.id) is None
    assert store.count_jobs()[JobStatus.PENDING] == 0
    assert store.find_job_id_by_idempotency_key("order-7") is None
    store.enqueue(new_job(idempotency_key="order-7", business_key="order-7"))


def test_an_explicit_transaction_on_an_autocommit_connection(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """``conn.begin()`` on an autocommit connection: the jobs follow its commit or rollback."""
    kept, dropped = new_job(), new_job()
    conn = connect(autocommit=True)
    conn.begin()
    store.enqueue_in(conn, kept)
    assert store.get_job(kept.id) is None
    conn.commit()
    conn.begin()
    store.enqueue_in(conn, dropped)
    conn.rollback()
    assert store.get_job(kept.id) is not None
    assert store.get_job(dropped.id) is None


def test_an_idle_autocommit_connection_commits_at_once(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """Outside any transaction there is nothing to join: the jobs are stored atomically."""
    job = new_job()
    store.enqueue_many_in(connect(autocommit=True), [job])
    assert claimable(store) == [job.id]


@pytest.mark.parametrize("isolation", ["READ COMMITTED", "REPEATABLE READ"])
def test_a_conflict_leaves_the_callers_transaction_usable(
    store: MySQLJobStore, connect: Callable[..., Any], isolation: str
) -> None:
    """A duplicate key raises the usual error naming the holder, after rolling back to a
    savepoint; the caller's earlier and later work in the same transaction still commits.
    Under REPEATABLE READ too, where the caller's snapshot predates the holder."""
    conn = connect()
    with conn.cursor() as cursor:
        cursor.execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {isolation}")
        cursor.execute("SELECT COUNT(*) FROM ratchet_job")  # the snapshot starts here
    holder = new_job(business_key="invoice-1", idempotency_key="req-1")
    store.enqueue(holder)
    first, last = new_job(), new_job()
    store.enqueue_in(conn, first)
    with pytest.raises(BusinessKeyConflictError) as info:
        store.enqueue_in(conn, new_job(business_key="invoice-1"))
    assert info.value.existing_job_id == holder.id
    with pytest.raises(DuplicateIdempotencyKeyError) as duplicate:
        store.enqueue_many_in(conn, [new_job(), new_job(idempotency_key="req-1")])
    assert duplicate.value.existing_job_id == holder.id
    store.enqueue_in(conn, last)
    conn.commit()
    assert sorted(claimable(store)) == sorted([holder.id, first.id, last.id])


def test_a_key_held_inside_the_callers_own_transaction(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """The holder of a business key can be a job the caller enqueued earlier in the same,
    uncommitted transaction: the error still names it."""
    conn = connect()
    mine = new_job(business_key="k")
    store.enqueue_in(conn, mine)
    with pytest.raises(BusinessKeyConflictError) as info:
        store.enqueue_in(conn, new_job(business_key="k"))
    assert info.value.existing_job_id == mine.id
    conn.rollback()


def test_a_connection_without_utf8mb4_is_refused(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    with pytest.raises(RatchetError, match="utf8mb4"):
        store.enqueue_in(connect(charset="latin1"), new_job())


def test_other_objects_are_refused(store: MySQLJobStore) -> None:
    with pytest.raises(TypeError, match=r"pymysql\.connections\.Connection"):
        store.enqueue_in(object(), new_job())


# -- SQLAlchemy ------------------------------------------------------------------------


@pytest.fixture
def engine(mysql_url: str) -> Iterator[Any]:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(mysql_url.replace("mysql://", "mysql+pymysql://", 1))
    yield engine
    engine.dispose()


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_sqlalchemy_connection(store: MySQLJobStore, engine: Any, outcome: str) -> None:
    """An SQLAlchemy Connection (commit-as-you-go): the job follows its commit or rollback."""
    from sqlalchemy import text

    job = new_job()
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
        store.enqueue_in(conn, job)
        assert store.get_job(job.id) is None
        getattr(conn, outcome)()
    assert (store.get_job(job.id) is not None) is (outcome == "commit")


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_sqlalchemy_session(store: MySQLJobStore, engine: Any, outcome: str) -> None:
    """An ORM Session, including one that has not begun a transaction yet."""
    from sqlalchemy.orm import Session

    job = new_job()
    with Session(engine) as session:
        store.enqueue_in(session, job)
        assert store.get_job(job.id) is None
        getattr(session, outcome)()
    assert (store.get_job(job.id) is not None) is (outcome == "commit")


def test_sqlalchemy_engine_begin_block(store: MySQLJobStore, engine: Any) -> None:
    """``with engine.begin()``: committed when the block ends without error."""
    job = new_job()
    with engine.begin() as conn:
        store.enqueue_in(conn, job)
    assert claimable(store) == [job.id]


def test_application_api_encodes_checks_and_joins_the_transaction(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """``app.enqueue_in`` / ``builder.submit_in`` run the application's own checks
    (JSON arguments, payload limit) and write through the caller's transaction."""
    from ratchet import ArgumentsNotSerializableError, Ratchet

    app = Ratchet(store, coordinator="none")

    @app.job(name="ship")
    def ship(order: int) -> None: ...

    conn = connect()
    kept = app.enqueue_in(conn, ship, 1)
    keyed = app.builder(ship, 2).business_key("order-2").submit_in(conn)
    with pytest.raises(ArgumentsNotSerializableError):
        app.enqueue_in(conn, ship, object())
    assert app.get_job(kept) is None
    conn.commit()
    assert app.get_job(kept).args == (1,)  # type: ignore[union-attr]
    assert app.get_job(keyed).business_key == "order-2"  # type: ignore[union-attr]
    gone = app.enqueue_many_in(conn, ship, [(3,), (4,)])
    conn.rollback()
    assert all(app.get_job(job_id) is None for job_id in gone)

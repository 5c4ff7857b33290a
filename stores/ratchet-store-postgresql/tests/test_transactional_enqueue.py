"""Transactional enqueue: a job written through the caller's connection lives or dies with
the caller's transaction, and is invisible to workers until the commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet.spi import JobStatus
from ratchet_store_postgresql import PostgreSQLJobStore, SupportsTransactionalEnqueue
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server


def claimable(store: PostgreSQLJobStore) -> list[str]:
    """Ids a worker on another connection can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="worker", limit=100, priority_boost_seconds=0)
    return [job.id for job in claimed]


def test_the_store_declares_the_capability(store: PostgreSQLJobStore) -> None:
    assert isinstance(store, SupportsTransactionalEnqueue)


def test_job_appears_only_when_the_caller_commits(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """Inside an open psycopg transaction the job is invisible to a worker; after the
    commit it is claimable, together with the caller's own write."""
    job = new_job(tags=("outbox",))
    with psycopg.connect(postgresql_url) as conn:  # psycopg's default: not autocommit
        conn.execute("CREATE TEMPORARY TABLE orders (id int)")
        conn.execute("INSERT INTO orders VALUES (1)")
        store.enqueue_in(conn, job)
        assert store.get_job(job.id) is None
        assert claimable(store) == []
        conn.commit()
    assert claimable(store) == [job.id]
    assert store.get_job(job.id).tags == ("outbox",)  # type: ignore[union-attr]


def test_job_vanishes_when_the_caller_rolls_back(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """A rollback removes the job, its tags and its idempotency key: the key is free."""
    job = new_job(idempotency_key="order-7", business_key="order-7", tags=("t",))
    with psycopg.connect(postgresql_url) as conn:
        store.enqueue_many_in(conn, [job, new_job()])
        conn.rollback()
    assert store.get_job(job.id) is None
    assert store.count_jobs()[JobStatus.PENDING] == 0
    assert store.find_job_id_by_idempotency_key("order-7") is None
    store.enqueue(new_job(idempotency_key="order-7", business_key="order-7"))


def test_inside_a_transaction_block_of_an_autocommit_connection(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """``with conn.transaction()`` on an autocommit connection: committed at block end,
    discarded when the block raises."""
    kept, dropped = new_job(), new_job()
    with psycopg.connect(postgresql_url, autocommit=True) as conn:
        with conn.transaction():
            store.enqueue_in(conn, kept)
            assert store.get_job(kept.id) is None
        with pytest.raises(ZeroDivisionError), conn.transaction():
            store.enqueue_in(conn, dropped)
            raise ZeroDivisionError
    assert store.get_job(kept.id) is not None
    assert store.get_job(dropped.id) is None


def test_an_idle_autocommit_connection_commits_at_once(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """Outside any transaction there is nothing to join: the job is stored atomically."""
    job = new_job()
    with psycopg.connect(postgresql_url, autocommit=True) as conn:
        store.enqueue_in(conn, job)
    assert claimable(store) == [job.id]


def test_a_conflict_leaves_the_callers_transaction_usable(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """A duplicate key raises the usual error after rolling back to a savepoint; the
    caller's earlier and later work in the same transaction still commits."""
    holder = new_job(business_key="invoice-1", idempotency_key="req-1")
    store.enqueue(holder)
    first, last = new_job(), new_job()
    with psycopg.connect(postgresql_url) as conn:
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


def test_a_failed_transaction_is_refused(store: PostgreSQLJobStore, postgresql_url: str) -> None:
    """A caller's transaction that already failed cannot take a job: say so plainly."""
    with psycopg.connect(postgresql_url) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        with pytest.raises(RatchetError, match="roll it back first"):
            store.enqueue_in(conn, new_job())


def test_other_objects_are_refused(store: PostgreSQLJobStore) -> None:
    with pytest.raises(TypeError, match="psycopg.Connection"):
        store.enqueue_in(object(), new_job())


# -- SQLAlchemy ------------------------------------------------------------------------


@pytest.fixture
def engine(postgresql_url: str) -> Any:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    sa_url = postgresql_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = sqlalchemy.create_engine(sa_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_sqlalchemy_connection(store: PostgreSQLJobStore, engine: Any, outcome: str) -> None:
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
def test_sqlalchemy_session(store: PostgreSQLJobStore, engine: Any, outcome: str) -> None:
    """An ORM Session, including one that has not begun a transaction yet."""
    from sqlalchemy.orm import Session

    job = new_job()
    with Session(engine) as session:
        store.enqueue_in(session, job)
        assert store.get_job(job.id) is None
        getattr(session, outcome)()
    assert (store.get_job(job.id) is not None) is (outcome == "commit")


def test_sqlalchemy_engine_begin_block(
    fresh_store: Callable[[], PostgreSQLJobStore], engine: Any
) -> None:
    """``with engine.begin()``: committed when the block ends without error."""
    store = fresh_store()
    job = new_job()
    with engine.begin() as conn:
        store.enqueue_in(conn, job)
    assert claimable(store) == [job.id]


def test_application_api_encodes_checks_and_joins_the_transaction(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """``app.enqueue_in`` / ``builder.submit_in`` run the application's own checks
    (JSON arguments, payload limit) and write through the caller's transaction."""
    from ratchet import ArgumentsNotSerializableError, Ratchet

    app = Ratchet(store, coordinator="none")

    @app.job(name="ship")
    def ship(order: int) -> None: ...

    with psycopg.connect(postgresql_url) as conn:
        kept = app.enqueue_in(conn, ship, 1)
        keyed = app.builder(ship, 2).business_key("order-2").submit_in(conn)
        with pytest.raises(ArgumentsNotSerializableError):
            app.enqueue_in(conn, ship, object())
        assert app.get_job(kept) is None
        conn.commit()
    assert app.get_job(kept).args == (1,)  # type: ignore[union-attr]
    assert app.get_job(keyed).business_key == "order-2"  # type: ignore[union-attr]
    with psycopg.connect(postgresql_url) as conn:
        gone = app.enqueue_many_in(conn, ship, [(3,), (4,)])
        conn.rollback()
    assert all(app.get_job(job_id) is None for job_id in gone)

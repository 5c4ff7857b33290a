"""Transactional enqueue on the embedded store: the application's own sqlite3 (or
SQLAlchemy) connection to the store's file decides, by its commit or rollback, whether the
jobs exist. The kit's transactional contracts run on it too (ratchet-tck's built-in
stores); these are the SQLite-specific facts."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet import Ratchet
from ratchet.errors import BusinessKeyConflictError, RatchetError
from ratchet.spi import JobStatus, NewJob, new_job_id
from ratchet.stores.sqlite.store import SQLiteJobStore


def job(**fields: object) -> NewJob:
    return NewJob(
        id=new_job_id(),
        name="t",
        target="tests:nothing",
        args_json="[]",
        kwargs_json="{}",
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "app.db")


@pytest.fixture
def store(path: str) -> Iterator[SQLiteJobStore]:
    opened = SQLiteJobStore(path)
    yield opened
    opened.close()


def connect(path: str, **options: object) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=30.0, check_same_thread=False, **options)  # type: ignore[arg-type]


def test_jobs_appear_at_commit_and_vanish_at_rollback(store: SQLiteJobStore, path: str) -> None:
    kept, dropped = job(), job()
    conn = connect(path)
    store.enqueue_in(conn, kept)
    assert store.get_job(kept.id) is None  # not visible before the commit
    conn.commit()
    assert store.get_job(kept.id) is not None
    store.enqueue_in(conn, dropped)
    conn.rollback()
    assert store.get_job(dropped.id) is None
    conn.close()


def test_the_callers_own_rows_share_the_fate_of_the_jobs(store: SQLiteJobStore, path: str) -> None:
    conn = connect(path)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.execute("INSERT INTO orders VALUES (1)")
    shipped = job()
    store.enqueue_in(conn, shipped)
    conn.rollback()
    assert conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 0
    assert store.get_job(shipped.id) is None


def test_a_conflict_leaves_the_callers_transaction_usable(store: SQLiteJobStore, path: str) -> None:
    holder = job(business_key="order-7")
    store.enqueue(holder)
    conn = connect(path)
    first = job()
    store.enqueue_in(conn, first)
    with pytest.raises(BusinessKeyConflictError) as raised:
        store.enqueue_in(conn, job(business_key="order-7"))
    assert raised.value.existing_job_id == holder.id
    conn.commit()  # the earlier job of the same transaction survives the conflict
    assert store.get_job(first.id) is not None


def test_an_autocommit_connection_commits_at_once(store: SQLiteJobStore, path: str) -> None:
    conn = connect(path, isolation_level=None)
    now = job()
    store.enqueue_in(conn, now)
    assert not conn.in_transaction
    assert store.get_job(now.id) is not None


def test_a_connection_to_another_file_is_refused(store: SQLiteJobStore, tmp_path: Path) -> None:
    other = connect(str(tmp_path / "other.db"))
    with pytest.raises(RatchetError, match="store's file"):
        store.enqueue_in(other, job())
    memory = sqlite3.connect(":memory:")
    with pytest.raises(RatchetError, match="in-memory"):
        store.enqueue_in(memory, job())


def test_an_in_memory_store_has_no_other_connection() -> None:
    store = SQLiteJobStore.from_memory_url("memory://")
    with pytest.raises(RatchetError, match="in memory"):
        store.enqueue_in(sqlite3.connect(":memory:"), job())


def test_an_idle_worker_does_not_wait_for_an_open_application_transaction(
    store: SQLiteJobStore, path: str
) -> None:
    """The caller's uncommitted enqueue holds SQLite's write lock; a claim with nothing
    due must answer at once instead of waiting up to the busy timeout."""
    conn = connect(path)
    store.enqueue_in(conn, job())  # holds the write lock until commit
    started = time.monotonic()
    assert store.claim_due_jobs(node_id="n1", limit=5, priority_boost_seconds=0) == []
    waited = time.monotonic() - started
    conn.commit()
    assert waited < 5, f"the claim waited {waited:.1f}s on the application's transaction"
    claimed = store.claim_due_jobs(node_id="n1", limit=5, priority_boost_seconds=0)
    assert len(claimed) == 1


def test_the_app_enqueues_in_a_transaction(store: SQLiteJobStore, path: str) -> None:
    app = Ratchet(store, coordinator="none")

    @app.job(name="shop.ship")
    def ship(order: int) -> None: ...

    conn = connect(path)
    job_id = app.enqueue_in(conn, ship, 7)
    ids = app.enqueue_many_in(conn, ship, [(8,), (9,)])
    conn.commit()
    assert {store.get_job(i).status for i in [job_id, *ids]} == {JobStatus.PENDING}  # type: ignore[union-attr]


def test_sqlalchemy_session_commits_and_rolls_back(store: SQLiteJobStore, path: str) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    engine = sqlalchemy.create_engine(f"sqlite:///{path}")
    kept, dropped = job(), job()
    with Session(engine) as session:
        store.enqueue_in(session, kept)
        session.commit()
        store.enqueue_in(session, dropped)
        session.rollback()
    engine.dispose()
    assert store.get_job(kept.id) is not None
    assert store.get_job(dropped.id) is None


def test_async_sqlalchemy_through_aiosqlite(store: SQLiteJobStore, path: str) -> None:
    pytest.importorskip("aiosqlite")
    import asyncio

    from sqlalchemy.ext.asyncio import create_async_engine

    app = Ratchet(store, coordinator="none")

    @app.job(name="shop.ship")
    def ship(order: int) -> None: ...

    async def scenario() -> tuple[str, str]:
        engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
        async with engine.connect() as conn:
            kept = await app.enqueue_in_async(conn, ship, 1)
            await conn.commit()
            dropped = await app.enqueue_in_async(conn, ship, 2)
            await conn.rollback()
        await engine.dispose()
        return kept, dropped

    kept, dropped = asyncio.run(scenario())
    assert store.get_job(kept) is not None
    assert store.get_job(dropped) is None

"""Transactional enqueue from asyncio: ``await app.enqueue_in_async(...)`` and
``enqueue_many_in_async`` on an SQLAlchemy ``AsyncSession`` or ``AsyncConnection`` of a
``postgresql+psycopg://`` async engine.

Each guarantee of the sync path holds here too, each checked against its failure: the jobs
exist inside the caller's transaction (read on the caller's own connection) and nowhere
else until the commit; a rollback removes them and frees their keys; a key conflict names
the holder and leaves the caller's transaction usable; the LISTEN/NOTIFY hint arrives at the
commit, in commit order, and never for a rollback. A batch of 100 plain jobs takes the
COPY path (``COPY_THRESHOLD``), which the async path drives through psycopg's
``AsyncCopy``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from ratchet import JobPriority, Ratchet
from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._enqueue import COPY_THRESHOLD
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

T = TypeVar("T")
Transaction = AsyncSession | AsyncConnection
KINDS = ("AsyncSession", "AsyncConnection")
BATCH = 100
HINT_CHANNEL = "ratchet_test_async_hint"


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(scenario())


def claimable(store: PostgreSQLJobStore) -> list[str]:
    """Ids a worker on another connection can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="worker", limit=500, priority_boost_seconds=0)
    return sorted(job.id for job in claimed)


@pytest.fixture
def async_url(postgresql_url: str) -> str:
    """The test database as an SQLAlchemy URL for create_async_engine."""
    return make_url(postgresql_url).set(drivername="postgresql+psycopg").render_as_string(False)


@pytest.fixture
def app(store: PostgreSQLJobStore) -> Ratchet:
    application = Ratchet(store, coordinator="none")

    @application.job(name="shop.ship")
    def ship(order: int) -> None: ...

    @application.job(name="shop.alert", priority=JobPriority.HIGH)
    def alert(order: int) -> None: ...

    return application


@asynccontextmanager
async def engine_on(url: str, **options: Any) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(url, poolclass=NullPool, **options)
    try:
        yield engine
    finally:
        await engine.dispose()


def open_transaction(engine: AsyncEngine, kind: str) -> AbstractAsyncContextManager[Transaction]:
    """A new AsyncSession, or a new AsyncConnection, with no transaction begun yet."""
    return AsyncSession(engine) if kind == "AsyncSession" else engine.connect()


async def rows_seen_by(transaction: Transaction, ids: list[str]) -> int:
    """How many of ``ids`` the caller's own transaction sees in ratchet_job."""
    result = await transaction.execute(
        text("SELECT count(*) FROM ratchet_job WHERE id = ANY(:ids)"), {"ids": ids}
    )
    return int(result.scalar_one())


@pytest.mark.parametrize("kind", KINDS)
def test_jobs_appear_at_the_callers_commit_only(
    app: Ratchet, store: PostgreSQLJobStore, async_url: str, kind: str
) -> None:
    """One job and a COPY-sized batch, and nothing else on the connection: invisible to
    the store's connections (no get, no claim) until the caller commits, then all
    claimable. Fails before the commit if the insert ran on another connection or
    committed; after it if SQLAlchemy did not know of the transaction (its commit is then
    a no-op) or nothing reached it."""
    assert BATCH >= COPY_THRESHOLD

    async def scenario() -> list[str]:
        async with engine_on(async_url) as engine, open_transaction(engine, kind) as conn:
            one = await app.enqueue_in_async(conn, "shop.ship", 1)
            many = await app.enqueue_many_in_async(conn, "shop.ship", [(n,) for n in range(BATCH)])
            ids = [one, *many]
            assert store.get_job(one) is None and store.get_job(many[-1]) is None
            assert claimable(store) == []
            await conn.commit()
        return ids

    ids = run(scenario)
    assert claimable(store) == sorted(ids)


@pytest.mark.parametrize("kind", KINDS)
def test_a_rollback_removes_the_jobs_and_frees_their_keys(
    store: PostgreSQLJobStore, async_url: str, kind: str
) -> None:
    """A keyed job and a COPY-sized batch, seen inside the caller's transaction, are gone
    after its rollback, and both keys can be used again at once."""
    keyed = new_job(business_key="order-7", idempotency_key="request-7", tags=("outbox",))
    batch = [new_job() for _ in range(BATCH)]
    ids = [keyed.id, *(job.id for job in batch)]

    async def scenario() -> None:
        async with engine_on(async_url) as engine, open_transaction(engine, kind) as conn:
            await conn.run_sync(store.enqueue_in, keyed)
            await conn.run_sync(store.enqueue_many_in, batch)
            assert await rows_seen_by(conn, ids) == len(ids)  # they were written
            await conn.rollback()
            assert await rows_seen_by(conn, ids) == 0

    run(scenario)
    assert all(store.get_job(job_id) is None for job_id in ids)
    assert store.find_active_job_by_business_key("order-7") is None
    store.enqueue(new_job(business_key="order-7", idempotency_key="request-7"))


@pytest.mark.parametrize("kind", KINDS)
def test_a_conflict_names_the_holder_and_the_transaction_stays_usable(
    app: Ratchet, store: PostgreSQLJobStore, async_url: str, kind: str
) -> None:
    """Against a committed holder and one enqueued earlier in the same transaction, the
    conflicts name the holder; the caller's own statements and later enqueues still work,
    and its commit keeps everything but the refused jobs. Without the savepoint the
    transaction would be aborted and the commit would keep nothing."""
    holder = new_job(business_key="invoice-1", idempotency_key="request-1")
    store.enqueue(holder)
    mine = new_job(business_key="invoice-2")
    refused = new_job()

    async def scenario() -> tuple[str, str]:
        async with engine_on(async_url) as engine, open_transaction(engine, kind) as conn:
            first = await app.enqueue_in_async(conn, "shop.ship", 1)
            with pytest.raises(BusinessKeyConflictError) as held:
                await conn.run_sync(store.enqueue_in, new_job(business_key="invoice-1"))
            assert held.value.existing_job_id == holder.id
            with pytest.raises(DuplicateIdempotencyKeyError) as used:
                await conn.run_sync(
                    store.enqueue_many_in, [refused, new_job(idempotency_key="request-1")]
                )
            assert used.value.existing_job_id == holder.id
            await conn.run_sync(store.enqueue_in, mine)
            with pytest.raises(BusinessKeyConflictError) as own:
                await conn.run_sync(store.enqueue_in, new_job(business_key="invoice-2"))
            assert own.value.existing_job_id == mine.id
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
            last = await app.enqueue_in_async(conn, "shop.ship", 2)
            await conn.commit()
        return first, last

    first, last = run(scenario)
    assert store.get_job(refused.id) is None
    assert claimable(store) == sorted([holder.id, mine.id, first, last])


def test_the_hint_is_delivered_at_the_commit_only(
    app: Ratchet, store: PostgreSQLJobStore, postgresql_url: str, async_url: str
) -> None:
    """With the coordinator's hints on, a rolled-back enqueue sends nothing and a committed
    one's NOTIFY arrives after a NOTIFY sent while its transaction was still open: had the
    hint gone out at the insert (or on another connection), it would arrive first; had the
    rolled-back one been sent, its HIGH-priority payload would lead."""
    store.send_hints_with_enqueue(HINT_CHANNEL, lambda priority: f"jobs at {priority}")
    with psycopg.connect(postgresql_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {HINT_CHANNEL}")

        async def scenario() -> None:
            async with engine_on(async_url) as engine:
                async with AsyncSession(engine) as session:
                    await app.enqueue_in_async(session, "shop.alert", 1)
                    await session.rollback()
                async with AsyncSession(engine) as session:
                    await app.enqueue_in_async(session, "shop.ship", 2)
                    listener.execute(f"NOTIFY {HINT_CHANNEL}, 'marker'")
                    await session.commit()

        run(scenario)
        payloads = [n.payload for n in listener.notifies(timeout=10, stop_after=2)]
    assert payloads == ["marker", f"jobs at {int(JobPriority.NORMAL)}"]


def test_an_autocommit_connection_commits_at_once(
    app: Ratchet, store: PostgreSQLJobStore, async_url: str
) -> None:
    """AUTOCOMMIT isolation leaves no transaction to join: each enqueue (a COPY-sized
    batch included) is committed by itself, atomically, in psycopg's transaction block: a
    batch ending with a held key stores none of its jobs."""
    holder = new_job(idempotency_key="request-9")
    store.enqueue(holder)
    refused = [new_job() for _ in range(BATCH)]

    async def scenario() -> list[str]:
        async with (
            engine_on(async_url, isolation_level="AUTOCOMMIT") as engine,
            engine.connect() as conn,
        ):
            one = await app.enqueue_in_async(conn, "shop.ship", 1)
            assert store.get_job(one) is not None
            many = await app.enqueue_many_in_async(conn, "shop.ship", [(n,) for n in range(BATCH)])
            with pytest.raises(DuplicateIdempotencyKeyError):
                await conn.run_sync(
                    store.enqueue_many_in, [*refused, new_job(idempotency_key="request-9")]
                )
            return [one, *many]

    ids = run(scenario)
    assert all(store.get_job(job.id) is None for job in refused)
    assert claimable(store) == sorted([holder.id, *ids])


def test_a_failed_transaction_is_refused(app: Ratchet, async_url: str) -> None:
    """The caller's transaction already failed: say so instead of a driver error."""

    async def scenario() -> None:
        async with engine_on(async_url) as engine, engine.connect() as conn:
            with pytest.raises(Exception, match="division by zero"):
                await conn.execute(text("SELECT 1 / 0"))
            with pytest.raises(RatchetError, match="roll it back first"):
                await app.enqueue_in_async(conn, "shop.ship", 1)

    run(scenario)


def test_sync_calls_refuse_async_objects(
    app: Ratchet, store: PostgreSQLJobStore, async_url: str
) -> None:
    """``enqueue_in`` cannot await: an AsyncSession or AsyncConnection given to it (or to
    the store) is refused with the async method to call instead."""

    async def scenario() -> None:
        async with engine_on(async_url) as engine, engine.connect() as conn:
            with pytest.raises(TypeError, match="enqueue_in_async"):
                app.enqueue_in(conn, "shop.ship", 1)
            with pytest.raises(TypeError, match="enqueue_in_async"):
                store.enqueue_in(AsyncSession(engine), new_job())

    run(scenario)
    assert claimable(store) == []

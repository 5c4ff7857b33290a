"""Transactional enqueue from asyncio: ``await app.enqueue_in_async(...)`` and
``enqueue_many_in_async`` on an SQLAlchemy ``AsyncSession`` or ``AsyncConnection`` of a
``mysql+aiomysql://`` async engine.

Each guarantee of the sync path holds here too, each checked against its failure: the jobs
reach the caller's transaction and nowhere else until its commit; a rollback removes them
(seen inside the transaction first) and frees their keys; a key conflict names the holder
and leaves the caller's transaction usable; an autocommit connection commits each enqueue
atomically; a connection without utf8mb4 is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import pytest
from sqlalchemy import bindparam, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from ratchet import Ratchet
from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

T = TypeVar("T")
Transaction = AsyncSession | AsyncConnection
KINDS = ("AsyncSession", "AsyncConnection")
BATCH = 20


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(scenario())


def claimable(store: MySQLJobStore) -> list[str]:
    """Ids a worker on another connection can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="worker", limit=500, priority_boost_seconds=0)
    return sorted(job.id for job in claimed)


@pytest.fixture
def async_url(mysql_url: str) -> Callable[..., str]:
    """The test database as an SQLAlchemy URL for create_async_engine (utf8mb4 unless
    another ``charset`` is given)."""

    def url(charset: str = "utf8mb4") -> str:
        parsed = make_url(mysql_url).set(drivername="mysql+aiomysql")
        return parsed.update_query_dict({"charset": charset}).render_as_string(False)

    return url


@pytest.fixture
def app(store: MySQLJobStore) -> Ratchet:
    application = Ratchet(store, coordinator="none")

    @application.job(name="shop.ship")
    def ship(order: int) -> None: ...

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
    statement = text("SELECT COUNT(*) FROM ratchet_job WHERE id IN :ids").bindparams(
        bindparam("ids", expanding=True)
    )
    return int((await transaction.execute(statement, {"ids": ids})).scalar_one())


@pytest.mark.parametrize("kind", KINDS)
def test_jobs_appear_at_the_callers_commit_only(
    app: Ratchet, store: MySQLJobStore, async_url: Callable[..., str], kind: str
) -> None:
    """One job and a batch, and nothing else on the connection: invisible to the store's
    connections (no get, no claim) until the caller commits, then all claimable. Fails
    before the commit if the insert ran on another connection or committed; after it if
    SQLAlchemy did not know of the transaction (its commit is then a no-op)."""

    async def scenario() -> list[str]:
        async with engine_on(async_url()) as engine, open_transaction(engine, kind) as conn:
            one = await app.enqueue_in_async(conn, "shop.ship", 1)
            many = await app.enqueue_many_in_async(conn, "shop.ship", [(n,) for n in range(BATCH)])
            assert store.get_job(one) is None and store.get_job(many[-1]) is None
            assert claimable(store) == []
            await conn.commit()
        return [one, *many]

    ids = run(scenario)
    assert claimable(store) == sorted(ids)


@pytest.mark.parametrize("kind", KINDS)
def test_a_rollback_removes_the_jobs_and_frees_their_keys(
    store: MySQLJobStore, async_url: Callable[..., str], kind: str
) -> None:
    """A keyed, tagged job and a batch, seen inside the caller's transaction, are gone
    after its rollback, and both keys can be used again at once."""
    keyed = new_job(business_key="order-7", idempotency_key="request-7", tags=("outbox",))
    batch = [new_job() for _ in range(BATCH)]
    ids = [keyed.id, *(job.id for job in batch)]

    async def scenario() -> None:
        async with engine_on(async_url()) as engine, open_transaction(engine, kind) as conn:
            await conn.run_sync(store.enqueue_in, keyed)
            await conn.run_sync(store.enqueue_many_in, batch)
            assert await rows_seen_by(conn, ids) == len(ids)  # they were written
            await conn.rollback()
            assert await rows_seen_by(conn, ids) == 0

    run(scenario)
    assert all(store.get_job(job_id) is None for job_id in ids)
    assert store.find_active_job_by_business_key("order-7") is None
    assert store.find_job_id_by_idempotency_key("request-7") is None
    store.enqueue(new_job(business_key="order-7", idempotency_key="request-7"))


@pytest.mark.parametrize("kind", KINDS)
def test_a_conflict_names_the_holder_and_the_transaction_stays_usable(
    app: Ratchet, store: MySQLJobStore, async_url: Callable[..., str], kind: str
) -> None:
    """Against a committed holder and one enqueued earlier in the same transaction, the
    conflicts name the holder; the caller's own statements and later enqueues still work,
    and its commit keeps everything but the refused jobs. Without the savepoint the
    refused batch's idempotency key, written before its jobs met the held business key,
    would be committed with the rest and stay used."""
    holder = new_job(business_key="invoice-1", idempotency_key="request-1")
    store.enqueue(holder)
    mine = new_job(business_key="invoice-2")
    refused = new_job(idempotency_key="request-2")

    async def scenario() -> tuple[str, str]:
        async with engine_on(async_url()) as engine, open_transaction(engine, kind) as conn:
            first = await app.enqueue_in_async(conn, "shop.ship", 1)
            with pytest.raises(BusinessKeyConflictError) as held:
                await conn.run_sync(
                    store.enqueue_many_in, [refused, new_job(business_key="invoice-1")]
                )
            assert held.value.existing_job_id == holder.id
            with pytest.raises(DuplicateIdempotencyKeyError) as used:
                await conn.run_sync(store.enqueue_in, new_job(idempotency_key="request-1"))
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
    assert store.find_job_id_by_idempotency_key("request-2") is None
    assert claimable(store) == sorted([holder.id, mine.id, first, last])


def test_an_autocommit_connection_commits_at_once(
    app: Ratchet, store: MySQLJobStore, async_url: Callable[..., str]
) -> None:
    """AUTOCOMMIT isolation leaves no transaction to join: each enqueue is committed by
    itself, atomically (aiomysql's ``begin()``): a batch ending with a held business key
    stores none of its jobs, nor the idempotency key written before the jobs."""
    holder = new_job(business_key="order-9")
    store.enqueue(holder)
    refused = [new_job(idempotency_key="request-9"), *(new_job() for _ in range(BATCH))]

    async def scenario() -> list[str]:
        async with (
            engine_on(async_url(), isolation_level="AUTOCOMMIT") as engine,
            engine.connect() as conn,
        ):
            one = await app.enqueue_in_async(conn, "shop.ship", 1)
            assert store.get_job(one) is not None
            many = await app.enqueue_many_in_async(conn, "shop.ship", [(n,) for n in range(BATCH)])
            with pytest.raises(BusinessKeyConflictError):
                await conn.run_sync(
                    store.enqueue_many_in, [*refused, new_job(business_key="order-9")]
                )
            return [one, *many]

    ids = run(scenario)
    assert all(store.get_job(job.id) is None for job in refused)
    assert store.find_job_id_by_idempotency_key("request-9") is None
    assert claimable(store) == sorted([holder.id, *ids])


def test_a_connection_without_utf8mb4_is_refused(
    app: Ratchet, store: MySQLJobStore, async_url: Callable[..., str]
) -> None:
    async def scenario() -> None:
        async with engine_on(async_url("latin1")) as engine, AsyncSession(engine) as session:
            with pytest.raises(RatchetError, match="utf8mb4"):
                await app.enqueue_in_async(session, "shop.ship", 1)
            await session.commit()

    run(scenario)
    assert claimable(store) == []


def test_sync_calls_refuse_async_objects(
    app: Ratchet, store: MySQLJobStore, async_url: Callable[..., str]
) -> None:
    """``enqueue_in`` cannot await: an AsyncSession or AsyncConnection given to it (or to
    the store) is refused with the async method to call instead."""

    async def scenario() -> None:
        async with engine_on(async_url()) as engine, engine.connect() as conn:
            with pytest.raises(TypeError, match="enqueue_in_async"):
                app.enqueue_in(conn, "shop.ship", 1)
            with pytest.raises(TypeError, match="enqueue_in_async"):
                store.enqueue_many_in(AsyncSession(engine), [new_job()])

    run(scenario)
    assert claimable(store) == []

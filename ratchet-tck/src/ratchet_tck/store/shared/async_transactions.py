"""Transactional enqueue from asyncio (``await app.enqueue_in_async(...)`` and
``enqueue_many_in_async``) on an SQLAlchemy ``AsyncSession`` or ``AsyncConnection``: tests
a SQL store package imports into its own test module (see :mod:`ratchet_tck.store.shared`
for how and why), with the helpers its own async tests use.

Each guarantee of the sync path holds here too, each checked against its failure: the jobs
reach the caller's transaction (read on the caller's own connection) and nowhere else until
its commit; a rollback removes them and frees their keys; a key conflict names the holder
and leaves the caller's transaction usable; an autocommit connection commits each enqueue
by itself, atomically; the sync methods refuse async objects. They are not contracts of the
suite: the kit's harness hands out sync transactions only.

Hooks: ``async_url``, the test database as a URL for ``create_async_engine`` (the store's
async driver: ``postgresql+psycopg://``, ``mysql+aiomysql://``), and ``async_batch_size``,
the length of the batches (long enough for the store's tuned batch path, when it has one).
They need the ``store`` fixture, SQLAlchemy's asyncio extension and that driver, and carry
no markers; the ``app`` fixture is theirs (a :class:`~ratchet.Ratchet` on ``store`` with the
job ``shop.ship(order)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import pytest
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from ratchet import Ratchet
from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import JobStore, SupportsTransactionalEnqueue
from ratchet_tck.store._base import new_job

__all__ = [
    "KINDS",
    "Transaction",
    "app",
    "claimable",
    "engine_on",
    "open_transaction",
    "rows_seen_by",
    "run",
    "test_a_conflict_names_the_holder_and_the_transaction_stays_usable",
    "test_a_rollback_removes_the_jobs_and_frees_their_keys",
    "test_an_autocommit_connection_commits_at_once",
    "test_jobs_appear_at_the_callers_commit_only",
    "test_sync_calls_refuse_async_objects",
]

T = TypeVar("T")
Transaction = AsyncSession | AsyncConnection
KINDS = ("AsyncSession", "AsyncConnection")
"""The two async objects an application may hand to ``enqueue_in_async``."""


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``scenario`` in an event loop of its own (the store under test stays sync)."""
    return asyncio.run(scenario())


def claimable(store: JobStore) -> list[str]:
    """Ids a worker on another connection can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="worker", limit=500, priority_boost_seconds=0)
    return sorted(job.id for job in claimed)


def transactional(store: JobStore) -> SupportsTransactionalEnqueue:
    """``store`` as the capability these tests exercise; a store without it fails them."""
    assert isinstance(store, SupportsTransactionalEnqueue), f"{store!r} has no enqueue_in"
    return store


@asynccontextmanager
async def engine_on(url: str, **options: Any) -> AsyncIterator[AsyncEngine]:
    """An async engine on ``url`` without a pool (each connection is the test's own and
    ends with it), disposed of on exit."""
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


@pytest.fixture
def app(store: JobStore) -> Ratchet:
    """An application on ``store`` with the job ``shop.ship(order)`` and no coordinator."""
    application = Ratchet(store, coordinator="none")

    @application.job(name="shop.ship")
    def ship(order: int) -> None: ...

    return application


@pytest.mark.parametrize("kind", KINDS)
def test_jobs_appear_at_the_callers_commit_only(
    app: Ratchet, store: JobStore, async_url: str, async_batch_size: int, kind: str
) -> None:
    """One job and a batch, and nothing else on the connection: invisible to the store's
    connections (no get, no claim) until the caller commits, then all claimable. Fails
    before the commit if the insert ran on another connection or committed; after it if
    SQLAlchemy did not know of the transaction (its commit is then a no-op) or nothing
    reached it."""

    async def scenario() -> list[str]:
        async with engine_on(async_url) as engine, open_transaction(engine, kind) as conn:
            one = await app.enqueue_in_async(conn, "shop.ship", 1)
            arguments = [(n,) for n in range(async_batch_size)]
            many = await app.enqueue_many_in_async(conn, "shop.ship", arguments)
            assert store.get_job(one) is None and store.get_job(many[-1]) is None
            assert claimable(store) == []
            await conn.commit()
        return [one, *many]

    ids = run(scenario)
    assert claimable(store) == sorted(ids)


@pytest.mark.parametrize("kind", KINDS)
def test_a_rollback_removes_the_jobs_and_frees_their_keys(
    store: JobStore, async_url: str, async_batch_size: int, kind: str
) -> None:
    """A keyed, tagged job and a batch, seen inside the caller's transaction, are gone
    after its rollback, and both keys can be used again at once."""
    writer = transactional(store)
    keyed = new_job(business_key="order-7", idempotency_key="request-7", tags=("outbox",))
    batch = [new_job() for _ in range(async_batch_size)]
    ids = [keyed.id, *(job.id for job in batch)]

    async def scenario() -> None:
        async with engine_on(async_url) as engine, open_transaction(engine, kind) as conn:
            await conn.run_sync(writer.enqueue_in, keyed)
            await conn.run_sync(writer.enqueue_many_in, batch)
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
    app: Ratchet, store: JobStore, async_url: str, kind: str
) -> None:
    """Against a committed holder (each key, alone and at the end of a batch) and one
    enqueued earlier in the same transaction, the conflicts name the holder; the caller's
    own statements and later enqueues still work, and its commit keeps everything but the
    refused jobs. Without the savepoint either the transaction is aborted and the commit
    keeps nothing, or a refused batch's idempotency key, written before its jobs met the
    held business key, is committed with the rest and stays used."""
    writer = transactional(store)
    holder = new_job(business_key="invoice-1", idempotency_key="request-1")
    store.enqueue(holder)
    mine = new_job(business_key="invoice-2")
    refused = [new_job(idempotency_key="request-2"), new_job()]

    async def scenario() -> tuple[str, str]:
        async with engine_on(async_url) as engine, open_transaction(engine, kind) as conn:
            first = await app.enqueue_in_async(conn, "shop.ship", 1)
            with pytest.raises(BusinessKeyConflictError) as held_in_batch:
                batch = [refused[0], new_job(business_key="invoice-1")]
                await conn.run_sync(writer.enqueue_many_in, batch)
            assert held_in_batch.value.existing_job_id == holder.id
            with pytest.raises(BusinessKeyConflictError) as held:
                await conn.run_sync(writer.enqueue_in, new_job(business_key="invoice-1"))
            assert held.value.existing_job_id == holder.id
            with pytest.raises(DuplicateIdempotencyKeyError) as used:
                await conn.run_sync(writer.enqueue_in, new_job(idempotency_key="request-1"))
            assert used.value.existing_job_id == holder.id
            with pytest.raises(DuplicateIdempotencyKeyError) as used_in_batch:
                batch = [refused[1], new_job(idempotency_key="request-1")]
                await conn.run_sync(writer.enqueue_many_in, batch)
            assert used_in_batch.value.existing_job_id == holder.id
            await conn.run_sync(writer.enqueue_in, mine)
            with pytest.raises(BusinessKeyConflictError) as own:
                await conn.run_sync(writer.enqueue_in, new_job(business_key="invoice-2"))
            assert own.value.existing_job_id == mine.id
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
            last = await app.enqueue_in_async(conn, "shop.ship", 2)
            await conn.commit()
        return first, last

    first, last = run(scenario)
    assert all(store.get_job(job.id) is None for job in refused)
    assert store.find_job_id_by_idempotency_key("request-2") is None
    assert claimable(store) == sorted([holder.id, mine.id, first, last])


def test_an_autocommit_connection_commits_at_once(
    app: Ratchet, store: JobStore, async_url: str, async_batch_size: int
) -> None:
    """AUTOCOMMIT isolation leaves no transaction to join: each enqueue (a batch included)
    is committed by itself, atomically, in the driver's transaction block: a batch ending
    with a held business key, or with a used idempotency key, stores none of its jobs, nor
    the idempotency key written before the jobs."""
    writer = transactional(store)
    holder = new_job(business_key="order-9", idempotency_key="request-9")
    store.enqueue(holder)
    refused = [new_job(idempotency_key="request-10"), *(new_job() for _ in range(async_batch_size))]
    also_refused = [new_job() for _ in range(async_batch_size)]

    async def scenario() -> list[str]:
        async with (
            engine_on(async_url, isolation_level="AUTOCOMMIT") as engine,
            engine.connect() as conn,
        ):
            one = await app.enqueue_in_async(conn, "shop.ship", 1)
            assert store.get_job(one) is not None
            arguments = [(n,) for n in range(async_batch_size)]
            many = await app.enqueue_many_in_async(conn, "shop.ship", arguments)
            with pytest.raises(BusinessKeyConflictError):
                batch = [*refused, new_job(business_key="order-9")]
                await conn.run_sync(writer.enqueue_many_in, batch)
            with pytest.raises(DuplicateIdempotencyKeyError):
                batch = [*also_refused, new_job(idempotency_key="request-9")]
                await conn.run_sync(writer.enqueue_many_in, batch)
            return [one, *many]

    ids = run(scenario)
    assert all(store.get_job(job.id) is None for job in [*refused, *also_refused])
    assert store.find_job_id_by_idempotency_key("request-10") is None
    assert claimable(store) == sorted([holder.id, *ids])


def test_sync_calls_refuse_async_objects(app: Ratchet, store: JobStore, async_url: str) -> None:
    """``enqueue_in`` cannot await: an AsyncSession or AsyncConnection given to it (or to
    the store's ``enqueue_in`` or ``enqueue_many_in``) is refused with the async method to
    call instead."""
    writer = transactional(store)

    async def scenario() -> None:
        async with engine_on(async_url) as engine, engine.connect() as conn:
            with pytest.raises(TypeError, match="enqueue_in_async"):
                app.enqueue_in(conn, "shop.ship", 1)
            with pytest.raises(TypeError, match="enqueue_in_async"):
                writer.enqueue_in(AsyncSession(engine), new_job())
            with pytest.raises(TypeError, match="enqueue_in_async"):
                writer.enqueue_many_in(AsyncSession(engine), [new_job()])

    run(scenario)
    assert claimable(store) == []

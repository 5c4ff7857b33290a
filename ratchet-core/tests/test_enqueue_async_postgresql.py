"""``Ratchet.enqueue_async`` / ``enqueue_many_async`` in a Starlette app on PostgreSQL go
through the store's async pool (``SupportsAsyncEnqueue``), not a thread; a store without
the capability falls back to the thread.

Needs ``RATCHET_TEST_POSTGRESQL_URL`` (``eval "$(scripts/services env)"``); runs in the
database ``ratchet_test_enqueue_async`` of its own, created when missing. The store's own
async contracts are the kit's (``ratchet_tck.store.async_enqueue``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from ratchet import JobStatus, Ratchet
from ratchet.events import JobEnqueued
from ratchet.spi import SupportsAsyncEnqueue

psycopg = pytest.importorskip("psycopg")
store_module = pytest.importorskip("ratchet_store_postgresql")
PostgreSQLJobStore = store_module.PostgreSQLJobStore

pytestmark = pytest.mark.server

DATABASE = "ratchet_test_enqueue_async"


@pytest.fixture(scope="module")
def database_url() -> str:
    server = os.environ.get("RATCHET_TEST_POSTGRESQL_URL")
    if not server:
        pytest.skip("RATCHET_TEST_POSTGRESQL_URL is not set (scripts/services env)")
    with psycopg.connect(server, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
        if exists.fetchone() is None:
            conn.execute(f"CREATE DATABASE {DATABASE}")
    return f"{server.rsplit('/', 1)[0]}/{DATABASE}"


class ThreadedPostgreSQLStore(PostgreSQLJobStore):  # type: ignore[misc, valid-type]
    """The capability switched off (a Protocol member set to ``None`` is not implemented)."""

    enqueue_async = None
    enqueue_many_async = None


def shop(store: object) -> tuple[Ratchet, Starlette, list[JobEnqueued]]:
    app = Ratchet(store, coordinator="none")
    events: list[JobEnqueued] = []
    app.on(JobEnqueued, events.append)

    @app.job(name="shop.ship")
    def ship(order: int) -> None: ...

    async def order(request: Request) -> JSONResponse:
        first = await app.enqueue_async("shop.ship", 1)
        more = await app.enqueue_many_async("shop.ship", [(2,), (3,)])
        return JSONResponse({"ids": [first, *more]})

    return app, Starlette(routes=[Route("/order", order, methods=["POST"])]), events


def sync_requests(store: object) -> int:
    """Connections the store's sync pool has handed out (psycopg_pool's statistics)."""
    return int(store._pool.get_stats().get("requests_num", 0))  # type: ignore[attr-defined]


@pytest.fixture
def store(database_url: str) -> Iterator[object]:
    opened = PostgreSQLJobStore(database_url)
    opened.reset_for_tests()
    yield opened
    opened.close()


def test_enqueue_async_goes_through_the_async_pool(store: object) -> None:
    """Each request's three jobs are stored and announced (``JobEnqueued`` per job), the
    async pool hands out two connections per request (one per call), and once the app
    has read the database clock the sync pool hands out none. If this fails, look at ``Ratchet._store_jobs_off_loop``: it must await the
    store's ``enqueue_async`` / ``enqueue_many_async`` when the store offers them."""
    assert isinstance(store, SupportsAsyncEnqueue)
    app, web, events = shop(store)
    try:
        with TestClient(web) as client:
            # The first request also reads the database clock once (for the events' times).
            first = client.post("/order").json()["ids"]
            assert store.async_pool_requests() == 2  # type: ignore[attr-defined]
            sync_before = sync_requests(store)
            ids = client.post("/order").json()["ids"]
            sync_after = sync_requests(store)
        assert store.async_pool_requests() == 4  # type: ignore[attr-defined]
        assert sync_after == sync_before, "the write went through the sync pool"
        statuses = [job.status for job in map(app.get_job, first + ids) if job is not None]
        assert statuses == [JobStatus.PENDING] * 6
        assert sorted(event.job_id for event in events) == sorted(first + ids)
    finally:
        app.close()


def test_a_store_without_the_capability_still_enqueues_in_a_thread(database_url: str) -> None:
    """The control: the same store with the capability switched off stores the jobs
    through its sync pool, and its async pool is never used."""
    store = ThreadedPostgreSQLStore(database_url)
    store.reset_for_tests()
    assert not isinstance(store, SupportsAsyncEnqueue)
    app, web, _ = shop(store)
    try:
        with TestClient(web) as client:
            ids = client.post("/order").json()["ids"]
        assert len(ids) == 3 and all(app.get_job(job_id) is not None for job_id in ids)
        assert store.async_pool_requests() == 0
    finally:
        app.close()
        store.close()

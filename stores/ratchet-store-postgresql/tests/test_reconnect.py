"""Resilience, the PostgreSQL specifics: when the pool's liveness check cannot see a dead
connection yet, idempotent calls are retried once and claims are not; an enqueue whose
answer was lost is stored once. The tests are the kit's (``ratchet_tck.store.shared``);
this module supplies their hooks: how to blind the pool, how to lose an answer.

That the first call of each kind after every backend was terminated succeeds, and that no
job or claim is lost, are contracts of the kit (``ratchet_tck.store.reconnect``), run by
``test_conformance.py`` with
:meth:`~ratchet_store_postgresql.harness.PostgreSQLStoreHarness.drop_connections`. The
failures without a server are in ``test_url.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest

from ratchet.spi import NewJob
from ratchet_store_postgresql import PostgreSQLJobStore, _enqueue, _pool
from ratchet_tck.store.databases import StoreTestDatabase
from ratchet_tck.store.reconnect import use_several_connections
from ratchet_tck.store.shared.lost_answers import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.stale_pools import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.stale_pools import StalePool

pytestmark = pytest.mark.server

POOL_SIZE = 4


@pytest.fixture(scope="module")
def postgresql_url(postgresql_url: str, store_test_database: StoreTestDatabase) -> str:
    """This module's own database: its tests count rows and kill sessions, so a reset of
    the shared test database by a concurrent run must not reach them."""
    return store_test_database.own_database(postgresql_url, "ratchet_test_pg_reconnect")


@pytest.fixture
def stale_pool(
    postgresql_url: str,
    fresh_store: Callable[..., PostgreSQLJobStore],
    monkeypatch: pytest.MonkeyPatch,
) -> StalePool:
    """Every one of POOL_SIZE connections open and used (then terminated by the kit); the
    checkout check blinded by making ``_pool._server_closed`` always answer no
    (``PooledStore._run_idempotent`` must then retry)."""
    store = fresh_store(pool_min_size=POOL_SIZE, pool_max_size=POOL_SIZE)

    def fill() -> None:
        store._pool.wait(timeout=30)  # all POOL_SIZE connections open
        use_several_connections(store, POOL_SIZE)

    def blind() -> None:
        monkeypatch.setattr(_pool, "_server_closed", lambda conn: False)

    return StalePool(store=store, url=postgresql_url, size=POOL_SIZE, fill=fill, blind=blind)


def _hang_up(conn: psycopg.Connection[Any]) -> None:
    """The server ends this very session, as a restart would; the call then fails."""
    with contextlib.suppress(psycopg.OperationalError):
        conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    conn.execute("SELECT 1")  # raises: the connection is gone
    raise AssertionError("the session survived pg_terminate_backend")


@pytest.fixture
def lose_first_enqueue(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], list[int]]:
    """The first ``_enqueue.insert_jobs`` loses its connection, after the insert (the answer
    is lost: ``_enqueue.insert_pooled`` must count the retry's key conflicts with its own
    job ids as stored) or before it; returns the sizes of the inserts tried."""

    def lose(applied: bool) -> list[int]:
        real = _enqueue.insert_jobs
        attempts: list[int] = []

        def insert(conn: psycopg.Connection[Any], jobs: Sequence[NewJob], hint: Any = None) -> None:
            attempts.append(len(jobs))
            if len(attempts) == 1 and not applied:
                _hang_up(conn)
            real(conn, jobs, hint)
            if len(attempts) == 1:
                _hang_up(conn)

        monkeypatch.setattr(_enqueue, "insert_jobs", insert)
        return attempts

    return lose

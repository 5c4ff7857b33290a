"""Resilience, the MySQL specifics: a session killed in the middle of a call raises
StoreUnavailableError (password hidden) and the store heals. The kit's shared tests
(``ratchet_tck.store.shared``) run here on this module's hooks: when the pool's
liveness check cannot see a dead connection yet, idempotent calls are retried once and
claims are not; an enqueue whose answer was lost is stored once.

That the first call of each kind after every pooled session was killed succeeds, and that
no job or claim is lost, are contracts of the kit (``ratchet_tck.store.reconnect``), run by
``test_conformance.py`` with :meth:`~ratchet_store_mysql.harness.MySQLStoreHarness.drop_connections`.
The failures without a server are in ``test_url.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pymysql
import pytest
from pymysql.cursors import Cursor

from ratchet.errors import StoreUnavailableError
from ratchet.spi import NewJob
from ratchet_store_mysql import MySQLJobStore, _enqueue, _pool
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job, run_concurrently
from ratchet_tck.store.databases import StoreTestDatabase
from ratchet_tck.store.shared.lost_answers import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.stale_pools import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.stale_pools import StalePool

pytestmark = pytest.mark.server

POOL_SIZE = 4


@pytest.fixture(scope="module")
def mysql_url(mysql_url: str, store_test_database: StoreTestDatabase) -> str:
    """A database for this module alone: its tests count rows, which a concurrent run's
    reset of the shared test database must not touch."""
    return store_test_database.own_database(mysql_url, "ratchet_test_mysql_reconnect")


def _admin(mysql_url: str) -> pymysql.connections.Connection[Any]:
    """A connection outside the test database, to look at and kill the store's sessions."""
    kwargs = dict(parse_store_url(mysql_url).connect_kwargs)
    kwargs.pop("database")
    return pymysql.connect(**kwargs, autocommit=True)


def test_a_session_killed_mid_call_raises_store_unavailable_then_heals(
    mysql_url: str, fresh_store: Callable[..., MySQLJobStore]
) -> None:
    """A call whose session is killed while it runs raises StoreUnavailableError (not a
    driver error, not ``False``), without the password; the following calls work."""
    store = fresh_store()
    database = parse_store_url(mysql_url).database
    outcome: list[BaseException | None] = []

    def slow_call() -> None:
        try:
            store._one("SELECT SLEEP(20)")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    caller = threading.Thread(target=slow_call, daemon=True)
    caller.start()
    admin = _admin(mysql_url)
    try:
        for _ in range(500):  # bounded: wait until the SLEEP is running
            with admin.cursor() as cursor:
                cursor.execute(
                    "SELECT ID FROM information_schema.PROCESSLIST "
                    "WHERE DB = %s AND INFO LIKE 'SELECT SLEEP(20)%%'",
                    (database,),
                )
                running = [int(row[0]) for row in cursor.fetchall()]
            if running:
                break
            time.sleep(0.01)
        with admin.cursor() as cursor:
            cursor.execute(f"KILL {running[0]}")
        caller.join(30)
    finally:
        admin.close()
    [error] = outcome
    assert isinstance(error, StoreUnavailableError), repr(error)
    assert "ratchet:ratchet" not in str(error) and store.describe() in str(error)
    job = new_job()
    store.enqueue(job)
    assert store.get_job(job.id) is not None


@pytest.fixture
def stale_pool(
    mysql_url: str, fresh_store: Callable[..., MySQLJobStore], monkeypatch: pytest.MonkeyPatch
) -> StalePool:
    """POOL_SIZE sessions, all used at once (so the pool holds them idle) before the kit
    KILLs them; blinded, the checkout poll (``_pool._is_quiet``) sees every one as quiet,
    and ``PooledStore._run_idempotent`` must retry."""
    store = fresh_store(pool_max_size=POOL_SIZE)
    return StalePool(
        store=store,
        url=mysql_url,
        size=POOL_SIZE,
        fill=lambda: run_concurrently([lambda: store._one("SELECT SLEEP(0.05)")] * POOL_SIZE),
        blind=lambda: monkeypatch.setattr(_pool, "_is_quiet", lambda conn: True),
    )


def _hang_up(cursor: Cursor) -> None:
    """The server ends this very session, as a restart would; the call then fails."""
    cursor.execute("SELECT CONNECTION_ID()")
    row = cursor.fetchone()
    assert row is not None
    cursor.execute(f"KILL {int(row[0])}")  # raises, or the next statement does
    cursor.execute("SELECT 1")
    raise AssertionError("the session survived KILL")


@pytest.fixture
def lose_first_enqueue(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], list[int]]:
    """Make the first ``_enqueue.insert_jobs`` lose its connection, after committing (the
    answer is lost: ``_enqueue.all_stored`` must then count the rows as stored) or before
    inserting (nothing was written); the list holds the sizes of the inserts."""

    def lose(applied: bool) -> list[int]:
        real = _enqueue.insert_jobs
        attempts: list[int] = []

        def insert(cursor: Cursor, jobs: Sequence[NewJob]) -> None:
            attempts.append(len(jobs))
            if len(attempts) == 1 and not applied:
                _hang_up(cursor)
            real(cursor, jobs)
            if len(attempts) == 1:
                cursor.connection.commit()
                _hang_up(cursor)

        monkeypatch.setattr(_enqueue, "insert_jobs", insert)
        return attempts

    return lose

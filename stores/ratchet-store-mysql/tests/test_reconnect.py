"""Resilience: connections killed on the server (``KILL``) are replaced, transport failures
surface as StoreUnavailableError with the password hidden, and nothing is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pymysql
import pytest

from ratchet.errors import StoreUnavailableError
from ratchet.spi import JobStatus
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job, run_concurrently

T = TypeVar("T")


def _admin(mysql_url: str) -> pymysql.connections.Connection[Any]:
    """A connection outside the test database, to look at and kill the store's sessions."""
    kwargs = dict(parse_store_url(mysql_url).connect_kwargs)
    kwargs.pop("database")
    return pymysql.connect(**kwargs, autocommit=True)


def _sessions(admin: pymysql.connections.Connection[Any], database: str) -> list[int]:
    """Ids of the sessions on ``database`` (the store's: this database is the test's own)."""
    with admin.cursor() as cursor:
        cursor.execute(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND ID <> CONNECTION_ID()",
            (database,),
        )
        return [int(row[0]) for row in cursor.fetchall()]


def _kill_all(admin: pymysql.connections.Connection[Any], database: str) -> int:
    """KILL every session on ``database``; wait (bounded) until they are gone."""
    victims = _sessions(admin, database)
    with admin.cursor() as cursor:
        for session in victims:
            cursor.execute(f"KILL {session}")
    for _ in range(500):
        if not set(victims) & set(_sessions(admin, database)):
            break
        time.sleep(0.01)
    return len(victims)


def _at_most_one_failure(call: Callable[[], T]) -> tuple[T, int]:
    """Run ``call``; a single StoreUnavailableError is allowed, then it must succeed."""
    try:
        return call(), 0
    except StoreUnavailableError as exc:
        assert ":ratchet@" not in str(exc), "the password leaked into the error"
        return call(), 1


@pytest.mark.server
def test_store_recovers_after_its_sessions_are_killed(
    mysql_url: str, fresh_store: Callable[..., MySQLJobStore]
) -> None:
    """Three pooled sessions of the store are killed with KILL from another session: the
    next calls work (the pool notices the closed sockets before using them) and no job or
    claim is lost.

    On failure: the pool must replace connections the server closed, or each dead one
    fails a call of its own."""
    store = fresh_store(pool_max_size=4)
    database = parse_store_url(mysql_url).database
    jobs = [new_job() for _ in range(5)]
    store.enqueue_many(jobs)
    claimed = store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=0)
    # Three calls at once leave three idle connections in the pool.
    run_concurrently([lambda: store._one("SELECT SLEEP(0.2)") for _ in range(3)])
    admin = _admin(mysql_url)
    try:
        assert _kill_all(admin, database) >= 3
        counts, failures = _at_most_one_failure(store.count_jobs)
        assert (counts[JobStatus.PENDING], counts[JobStatus.RUNNING]) == (3, 2)
        for job in claimed:  # the claims survived: their fencing tokens still work
            assert store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        more = store.claim_due_jobs(node_id="n", limit=10, priority_boost_seconds=0)
        assert sorted(j.id for j in [*claimed, *more]) == sorted(j.id for j in jobs)
        assert failures == 0, "a killed idle connection was handed out"
    finally:
        admin.close()


@pytest.mark.server
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


def test_unreachable_server_raises_store_unavailable_without_the_password() -> None:
    """Nothing listens on port 1: opening the store (which applies the schema) fails with
    StoreUnavailableError whose message names the database but not the password."""
    url = "mysql://alice:s3cr3t-pw@127.0.0.1:1/ratchet?connect_timeout=2"
    with pytest.raises(StoreUnavailableError) as info:
        MySQLJobStore.from_url(url)
    assert "s3cr3t-pw" not in str(info.value)
    assert "mysql://alice@127.0.0.1:1/ratchet" in str(info.value)


def test_a_closed_store_refuses_calls() -> None:
    store = MySQLJobStore.from_url("mysql://alice:pw@127.0.0.1:1/ratchet", auto_migrate=False)
    store.close()
    store.close()  # idempotent
    with pytest.raises(Exception, match="closed"):
        store.count_jobs()

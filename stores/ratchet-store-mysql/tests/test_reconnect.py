"""Resilience, the MySQL specifics: a session killed in the middle of a call raises
StoreUnavailableError (password hidden) and the store heals; when the pool's liveness check
cannot see a dead connection yet, idempotent calls are retried once and claims are not; an
enqueue whose answer was lost is stored once.

That the first call of each kind after every pooled session was killed succeeds, and that
no job or claim is lost, are contracts of the kit (``ratchet_tck.store.reconnect``), run by
``test_conformance.py`` with :meth:`~ratchet_store_mysql.harness.MySQLStoreHarness.drop_connections`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pymysql
import pytest
from pymysql.cursors import Cursor

from ratchet.errors import DuplicateIdempotencyKeyError, StoreUnavailableError
from ratchet.spi import JobStatus, NewJob
from ratchet_store_mysql import MySQLJobStore, _enqueue, _pool
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.harness import MySQLStoreHarness
from ratchet_store_mysql.testing import ensure_database, with_database
from ratchet_tck.store import new_job, run_concurrently
from ratchet_tck.store.reconnect import FIRST_CALLS

POOL_SIZE = 4


@pytest.fixture(scope="module")
def mysql_url(mysql_url: str) -> str:
    """This module's own database: its tests count rows, so a reset of the shared test
    database by a concurrent run must not reach them."""
    url = with_database(mysql_url, "ratchet_test_mysql_reconnect")
    ensure_database(url)
    return url


def _admin(mysql_url: str) -> pymysql.connections.Connection[Any]:
    """A connection outside the test database, to look at and kill the store's sessions."""
    kwargs = dict(parse_store_url(mysql_url).connect_kwargs)
    kwargs.pop("database")
    return pymysql.connect(**kwargs, autocommit=True)


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


# -- the first calls after every pooled session was killed ------------------------------


def _kill_every_session(store: MySQLJobStore, mysql_url: str) -> None:
    """Use all pooled connections at once (so the pool holds POOL_SIZE idle ones), then
    KILL each of them, as a server restart would."""
    run_concurrently([lambda: store._one("SELECT SLEEP(0.05)")] * POOL_SIZE)
    assert MySQLStoreHarness(mysql_url).drop_connections(store) == POOL_SIZE


@pytest.mark.server
@pytest.mark.parametrize("call", [c for c in FIRST_CALLS if c != "claim_due_jobs"])
def test_idempotent_calls_are_retried_when_a_dead_connection_is_not_noticed(
    mysql_url: str,
    fresh_store: Callable[..., MySQLJobStore],
    call: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every pooled connection was used, then KILLed (the kit's reconnection contracts
    check the next call of each kind); here the checkout poll is blinded too (as when the
    server's hang-up has not reached the client yet): reads and enqueues still succeed, on
    a fresh connection.

    On failure: an idempotent call that hit a connection lost in use must be run once more
    (``PooledStore._run_idempotent``)."""
    store = fresh_store(pool_max_size=POOL_SIZE)
    job = new_job()
    store.enqueue(job)
    _kill_every_session(store, mysql_url)
    monkeypatch.setattr(_pool, "_is_quiet", lambda conn: True)
    assert FIRST_CALLS[call](store, job)


@pytest.mark.server
def test_a_claim_on_a_dead_connection_is_not_retried(
    mysql_url: str, fresh_store: Callable[..., MySQLJobStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim is not idempotent (a lost answer may hide claimed jobs): on a connection lost
    in use it raises StoreUnavailableError instead of being run again; nothing is claimed
    and the next call works."""
    store = fresh_store(pool_max_size=POOL_SIZE)
    job = new_job()
    store.enqueue(job)
    _kill_every_session(store, mysql_url)
    monkeypatch.setattr(_pool, "_is_quiet", lambda conn: True)
    with pytest.raises(StoreUnavailableError) as info:
        store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert "ratchet:ratchet" not in str(info.value), "the password leaked into the error"
    fetched = store.get_job(job.id)
    assert fetched is not None and fetched.status is JobStatus.PENDING


# -- an enqueue whose answer was lost ---------------------------------------------------


def _hang_up(cursor: Cursor) -> None:
    """The server ends this very session, as a restart would; the call then fails."""
    cursor.execute("SELECT CONNECTION_ID()")
    row = cursor.fetchone()
    assert row is not None
    cursor.execute(f"KILL {int(row[0])}")  # raises, or the next statement does
    cursor.execute("SELECT 1")
    raise AssertionError("the session survived KILL")


def _lose_the_first_attempt(monkeypatch: pytest.MonkeyPatch, *, after_commit: bool) -> list[int]:
    """Make the first ``insert_jobs`` lose its connection, after committing (the answer is
    lost) or before inserting (nothing was written); returns the sizes of the inserts."""
    real = _enqueue.insert_jobs
    attempts: list[int] = []

    def insert(cursor: Cursor, jobs: Sequence[NewJob]) -> None:
        attempts.append(len(jobs))
        if len(attempts) == 1 and not after_commit:
            _hang_up(cursor)
        real(cursor, jobs)
        if len(attempts) == 1:
            cursor.connection.commit()
            _hang_up(cursor)

    monkeypatch.setattr(_enqueue, "insert_jobs", insert)
    return attempts


BATCHES: dict[str, Callable[[], list[NewJob]]] = {
    "plain": lambda: [new_job()],
    "idempotency_key": lambda: [new_job(idempotency_key=f"k-{uuid.uuid4()}", tags=("a",))],
    "business_key": lambda: [new_job(business_key=f"b-{uuid.uuid4()}")],
    "batch": lambda: [new_job(idempotency_key=f"k-{uuid.uuid4()}") for _ in range(3)],
}


@pytest.mark.server
@pytest.mark.parametrize("batch", list(BATCHES))
def test_an_enqueue_whose_answer_was_lost_is_stored_once(
    store: MySQLJobStore, batch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transaction commits, then the connection dies before the answer arrives. The
    store retries on a fresh connection; the retry meets its own rows (same job ids) and
    succeeds: no false DuplicateIdempotencyKeyError or BusinessKeyConflictError, no second
    row.

    On failure: a retried enqueue whose key conflict comes from the very job ids it carries
    must count as stored (``_enqueue.all_stored``)."""
    jobs = BATCHES[batch]()
    attempts = _lose_the_first_attempt(monkeypatch, after_commit=True)
    store.enqueue_many(jobs)
    assert attempts == [len(jobs), len(jobs)], "the first attempt did not lose its answer"
    assert store.count_jobs()[JobStatus.PENDING] == len(jobs)
    for job in jobs:
        stored = store.get_job(job.id)
        assert stored is not None and stored.idempotency_key == job.idempotency_key
    keyed = [job for job in jobs if job.idempotency_key]
    if keyed:  # the key is really taken, by this job: a new enqueue with it is refused
        monkeypatch.undo()
        assert keyed[0].idempotency_key is not None
        assert store.find_job_id_by_idempotency_key(keyed[0].idempotency_key) == keyed[0].id
        with pytest.raises(DuplicateIdempotencyKeyError) as info:
            store.enqueue(new_job(idempotency_key=keyed[0].idempotency_key))
        assert info.value.existing_job_id == keyed[0].id


@pytest.mark.server
def test_a_retried_enqueue_still_reports_a_key_held_by_another_job(
    store: MySQLJobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection dies before anything was written; the retry then meets a key held by
    another job: that is a real conflict and must be raised, naming the holder."""
    holder = new_job(idempotency_key="taken")
    store.enqueue(holder)
    attempts = _lose_the_first_attempt(monkeypatch, after_commit=False)
    late = new_job(idempotency_key="taken")
    with pytest.raises(DuplicateIdempotencyKeyError) as info:
        store.enqueue(late)
    assert len(attempts) == 2, "the enqueue was not retried"
    assert info.value.existing_job_id == holder.id
    assert store.get_job(late.id) is None

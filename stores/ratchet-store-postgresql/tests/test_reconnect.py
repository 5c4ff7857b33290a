"""Resilience, the PostgreSQL specifics: transport failures surface as
StoreUnavailableError (password hidden); when the pool's liveness check cannot see a dead
connection yet, idempotent calls are retried once and claims are not; an enqueue whose
answer was lost is stored once.

That the first call of each kind after every backend was terminated succeeds, and that no
job or claim is lost, are contracts of the kit (``ratchet_tck.store.reconnect``), run by
``test_conformance.py`` with
:meth:`~ratchet_store_postgresql.harness.PostgreSQLStoreHarness.drop_connections`.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import pytest

from ratchet.errors import DuplicateIdempotencyKeyError, StoreUnavailableError
from ratchet.spi import JobStatus, NewJob
from ratchet_store_postgresql import PostgreSQLJobStore, _enqueue, _pool
from ratchet_store_postgresql.harness import PostgreSQLStoreHarness
from ratchet_store_postgresql.testing import ensure_database, with_database
from ratchet_tck.store import new_job
from ratchet_tck.store.reconnect import FIRST_CALLS, use_several_connections

POOL_SIZE = 4


@pytest.fixture(scope="module")
def postgresql_url(postgresql_url: str) -> str:
    """This module's own database: its tests count rows and kill sessions, so a reset of
    the shared test database by a concurrent run must not reach them."""
    url = with_database(postgresql_url, "ratchet_test_pg_reconnect")
    ensure_database(url)
    return url


def test_unreachable_server_raises_store_unavailable_without_the_password() -> None:
    """Nothing listens on port 1: opening the store fails with StoreUnavailableError whose
    message names the database but not the password."""
    url = "postgresql://alice:s3cr3t-pw@127.0.0.1:1/ratchet?connect_timeout=2"
    with pytest.raises(StoreUnavailableError) as info:
        PostgreSQLJobStore.from_url(url, pool_timeout=0.5)
    assert "s3cr3t-pw" not in str(info.value)
    assert "postgresql://alice@127.0.0.1:1/ratchet" in str(info.value)


def test_a_closed_store_refuses_calls() -> None:
    store = PostgreSQLJobStore.from_url(
        "postgresql://alice:pw@127.0.0.1:1/ratchet", auto_migrate=False, pool_min_size=0
    )
    store.close()
    store.close()  # idempotent
    with pytest.raises(Exception, match="closed"):
        store.count_jobs()


# -- the first calls after every pooled backend was terminated ----------------------------


class StalePool:
    """A store whose every pooled connection was used, then terminated on the server (what a
    server restart leaves behind)."""

    def __init__(self, store: PostgreSQLJobStore, harness: PostgreSQLStoreHarness) -> None:
        self.store = store
        self.harness = harness

    def terminate_every_backend(self) -> None:
        """Use the full pool at once, then pg_terminate_backend each of its connections."""
        self.store._pool.wait(timeout=30)  # all POOL_SIZE connections open
        use_several_connections(self.store, POOL_SIZE)
        assert self.harness.drop_connections(self.store) == POOL_SIZE


@pytest.fixture
def stale_pool(
    postgresql_url: str, fresh_store: Callable[[], PostgreSQLJobStore]
) -> Iterator[StalePool]:
    fresh_store()  # empties the database
    store = PostgreSQLJobStore.from_url(
        postgresql_url, pool_min_size=POOL_SIZE, pool_max_size=POOL_SIZE
    )
    harness = PostgreSQLStoreHarness(postgresql_url)
    try:
        yield StalePool(store, harness)
    finally:
        store.close()
        harness.close()


@pytest.mark.server
@pytest.mark.parametrize("call", [c for c in FIRST_CALLS if c != "claim_due_jobs"])
def test_idempotent_calls_are_retried_when_a_dead_connection_is_not_noticed(
    stale_pool: StalePool, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pooled connection was used, then terminated (the kit's reconnection contracts
    check the next call of each kind); here the checkout check is blinded too (as when
    the server's hang-up has not reached the client yet): reads and enqueues still
    succeed, on a fresh connection.

    On failure: an idempotent call that hit a connection lost in use must be run once more
    (``PooledStore._run_idempotent``) after the pool was purged of dead connections."""
    store = stale_pool.store
    job = new_job()
    store.enqueue(job)
    stale_pool.terminate_every_backend()
    monkeypatch.setattr(_pool, "_server_closed", lambda conn: False)
    assert FIRST_CALLS[call](store, job)


@pytest.mark.server
def test_a_claim_on_a_dead_connection_is_not_retried(
    stale_pool: StalePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim is not idempotent (a lost answer may hide claimed jobs): on a connection lost
    in use it raises StoreUnavailableError instead of being run again; nothing is claimed
    and the next call works."""
    store = stale_pool.store
    job = new_job()
    store.enqueue(job)
    stale_pool.terminate_every_backend()
    monkeypatch.setattr(_pool, "_server_closed", lambda conn: False)
    with pytest.raises(StoreUnavailableError) as info:
        store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert ":ratchet@" not in str(info.value), "the password leaked into the error"
    fetched = store.get_job(job.id)
    assert fetched is not None and fetched.status is JobStatus.PENDING


# -- an enqueue whose answer was lost ---------------------------------------------------


def _hang_up(conn: psycopg.Connection[Any]) -> None:
    """The server ends this very session, as a restart would; the call then fails."""
    with contextlib.suppress(psycopg.OperationalError):
        conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    conn.execute("SELECT 1")  # raises: the connection is gone
    raise AssertionError("the session survived pg_terminate_backend")


def _lose_the_first_attempt(monkeypatch: pytest.MonkeyPatch, *, after_insert: bool) -> list[int]:
    """Make the first ``insert_jobs`` lose its connection, after (the answer is lost) or
    before (nothing was written) the insert; returns the sizes of the inserts tried."""
    real = _enqueue.insert_jobs
    attempts: list[int] = []

    def insert(conn: psycopg.Connection[Any], jobs: Sequence[NewJob], hint: Any = None) -> None:
        attempts.append(len(jobs))
        if len(attempts) == 1 and not after_insert:
            _hang_up(conn)
        real(conn, jobs, hint)
        if len(attempts) == 1:
            _hang_up(conn)

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
    store: PostgreSQLJobStore, batch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The insert commits, then the connection dies before the answer arrives. The store
    retries on a fresh connection; the retry meets its own rows (same job ids) and succeeds:
    no false DuplicateIdempotencyKeyError or BusinessKeyConflictError, no second row.

    On failure: a retried enqueue whose key conflict comes from the very job ids it carries
    must count as stored (``_enqueue.insert_pooled``)."""
    jobs = BATCHES[batch]()
    attempts = _lose_the_first_attempt(monkeypatch, after_insert=True)
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
    store: PostgreSQLJobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection dies before anything was written; the retry then meets a key held by
    another job: that is a real conflict and must be raised, naming the holder."""
    holder = new_job(idempotency_key="taken")
    store.enqueue(holder)
    attempts = _lose_the_first_attempt(monkeypatch, after_insert=False)
    late = new_job(idempotency_key="taken")
    with pytest.raises(DuplicateIdempotencyKeyError) as info:
        store.enqueue(late)
    assert len(attempts) == 2, "the enqueue was not retried"
    assert info.value.existing_job_id == holder.id
    assert store.get_job(late.id) is None

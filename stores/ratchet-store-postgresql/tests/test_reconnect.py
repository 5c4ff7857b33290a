"""Resilience: transport failures surface as StoreUnavailableError (password hidden), the
pool heals itself, and the first calls after a server restart do not fail on stale pooled
connections: dead ones are discarded before use, idempotent calls are retried once."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import pytest

from ratchet.errors import DuplicateIdempotencyKeyError, StoreUnavailableError
from ratchet.spi import JobStatus, NewJob, new_job_id
from ratchet_store_postgresql import PostgreSQLJobStore, _enqueue, _pool
from ratchet_store_postgresql.testing import ensure_database, with_database
from ratchet_tck.store import new_job, run_concurrently

POOL_SIZE = 4


@pytest.fixture(scope="module")
def postgresql_url(postgresql_url: str) -> str:
    """This module's own database: its tests count rows and kill sessions, so a reset of
    the shared test database by a concurrent run must not reach them."""
    url = with_database(postgresql_url, "ratchet_test_pg_reconnect")
    ensure_database(url)
    return url


def _job() -> NewJob:
    return NewJob(
        id=new_job_id(), name="tests.noop", target="tests:noop", args_json="[]", kwargs_json="{}"
    )


def _backends(admin: psycopg.Connection[tuple[int]], application_name: str) -> int:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application_name,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _wait_for_backends(admin_url: str, application_name: str, count: int) -> None:
    """Wait (bounded) until ``count`` backends of ``application_name`` are connected."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        for _ in range(500):
            if _backends(admin, application_name) >= count:
                return
            admin.execute("SELECT pg_sleep(0.01)")
    raise AssertionError(f"the pool never opened {count} connections")


def _terminate(admin_url: str, application_name: str) -> int:
    """pg_terminate_backend every connection of ``application_name``; wait until gone."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (application_name,),
        ).fetchone()
        for _ in range(500):  # bounded: the backends exit within milliseconds
            if _backends(admin, application_name) == 0:
                break
            admin.execute("SELECT pg_sleep(0.01)")
    return 0 if killed is None else int(killed[0])


@pytest.mark.server
def test_store_recovers_after_its_backends_are_terminated(
    postgresql_url: str, fresh_store: Callable[[], PostgreSQLJobStore]
) -> None:
    """All three pooled backends of the store are killed with pg_terminate_backend: the next
    calls work without an error, and no job or claim is lost.

    On failure: the store must discard pooled connections the server closed before using
    them (``_pool._server_closed``), or each dead one fails a call of its own."""
    fresh_store()  # empties the database
    name = f"ratchet-reconnect-{uuid.uuid4().hex[:8]}"
    url = f"{postgresql_url}?application_name={name}"
    store = PostgreSQLJobStore.from_url(url, pool_min_size=3, pool_max_size=4)
    try:
        jobs = [_job() for _ in range(5)]
        store.enqueue_many(jobs)
        claimed = store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=0)
        admin_url = with_database(postgresql_url, "postgres")
        _wait_for_backends(admin_url, name, 3)
        assert _terminate(admin_url, name) >= 3

        counts = store.count_jobs()
        assert (counts[JobStatus.PENDING], counts[JobStatus.RUNNING]) == (3, 2)
        for job in claimed:  # the claims survived: their fencing tokens still work
            assert store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        more = store.claim_due_jobs(node_id="n", limit=10, priority_boost_seconds=0)
        assert sorted(j.id for j in [*claimed, *more]) == sorted(j.id for j in jobs)
    finally:
        store.close()


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
    server restart leaves behind), plus the admin URL to do it again."""

    def __init__(self, store: PostgreSQLJobStore, admin_url: str, application_name: str) -> None:
        self.store = store
        self.admin_url = admin_url
        self.application_name = application_name

    def terminate_every_backend(self) -> None:
        """Use all pooled connections at once, then pg_terminate_backend each of them."""
        _wait_for_backends(self.admin_url, self.application_name, POOL_SIZE)
        run_concurrently([lambda: self.store._one("SELECT pg_sleep(0.05)")] * POOL_SIZE)
        assert _terminate(self.admin_url, self.application_name) == POOL_SIZE


@pytest.fixture
def stale_pool(
    postgresql_url: str, fresh_store: Callable[[], PostgreSQLJobStore]
) -> Iterator[StalePool]:
    fresh_store()  # empties the database
    name = f"ratchet-stale-{uuid.uuid4().hex[:8]}"
    store = PostgreSQLJobStore.from_url(
        f"{postgresql_url}?application_name={name}",
        pool_min_size=POOL_SIZE,
        pool_max_size=POOL_SIZE,
    )
    try:
        yield StalePool(store, with_database(postgresql_url, "postgres"), name)
    finally:
        store.close()


def _claim_one(store: PostgreSQLJobStore, job: NewJob) -> bool:
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    return claimed.id == job.id


def _enqueue_another(store: PostgreSQLJobStore, job: NewJob) -> bool:
    other = new_job()
    store.enqueue(other)
    return store.get_job(other.id) is not None


# Each first call returns whether it gave the right answer (raising is the failure looked for).
FIRST_CALLS: dict[str, Callable[[PostgreSQLJobStore, NewJob], bool]] = {
    "get_job": lambda store, job: store.get_job(job.id) is not None,
    "list_jobs": lambda store, job: [j.id for j in store.list_jobs()] == [job.id],
    "enqueue": _enqueue_another,
    "count_jobs": lambda store, job: store.count_jobs()[JobStatus.PENDING] == 1,
    "list_executions": lambda store, job: store.list_executions(job.id) == [],
    "list_nodes": lambda store, job: store.list_nodes() == [],
    "database_time": lambda store, job: store.database_time().tzinfo is not None,
    "claim_due_jobs": _claim_one,
}


@pytest.mark.server
@pytest.mark.parametrize("call", list(FIRST_CALLS))
def test_the_first_call_after_every_backend_was_terminated_succeeds(
    stale_pool: StalePool, call: str
) -> None:
    """Every pooled connection is used, then terminated with pg_terminate_backend (a server
    restart): the next call, whatever it is (a fenced claim included), succeeds.

    On failure: the pool handed out a connection the server had closed. Before using a
    pooled connection the store must look at its socket (``_pool._server_closed``: a
    readable idle socket means the server hung up) and take another one."""
    store = stale_pool.store
    job = new_job()
    store.enqueue(job)
    stale_pool.terminate_every_backend()
    assert FIRST_CALLS[call](store, job)


@pytest.mark.server
@pytest.mark.parametrize("call", [c for c in FIRST_CALLS if c != "claim_due_jobs"])
def test_idempotent_calls_are_retried_when_a_dead_connection_is_not_noticed(
    stale_pool: StalePool, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, but the checkout check is blinded (as when the server's hang-up has not
    reached the client yet): reads and enqueues still succeed, on a fresh connection.

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

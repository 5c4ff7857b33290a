"""Resilience: transport failures surface as StoreUnavailableError (password hidden) and the
pool heals itself, so the store works again without being reopened."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TypeVar

import psycopg
import pytest

from ratchet.errors import StoreUnavailableError
from ratchet.spi import JobStatus, NewJob, new_job_id
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql.testing import with_database

T = TypeVar("T")


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


def _at_most_one_failure(call: Callable[[], T]) -> tuple[T, int]:
    """Run ``call``; a single StoreUnavailableError is allowed, then it must succeed."""
    try:
        return call(), 0
    except StoreUnavailableError as exc:
        assert ":ratchet@" not in str(exc), "the password leaked into the error"
        return call(), 1


@pytest.mark.server
def test_store_recovers_after_its_backends_are_terminated(
    postgresql_url: str, fresh_store: Callable[[], PostgreSQLJobStore]
) -> None:
    """All three pooled backends of the store are killed with pg_terminate_backend: the next
    calls work after at most one StoreUnavailableError, and no job or claim is lost.

    On failure: after a broken connection the store must make the pool check its idle
    connections, or each dead one fails a call of its own."""
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

        counts, failures = _at_most_one_failure(store.count_jobs)
        assert (counts[JobStatus.PENDING], counts[JobStatus.RUNNING]) == (3, 2)
        for job in claimed:  # the claims survived: their fencing tokens still work
            assert store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        more = store.claim_due_jobs(node_id="n", limit=10, priority_boost_seconds=0)
        assert sorted(j.id for j in [*claimed, *more]) == sorted(j.id for j in jobs)
        assert failures <= 1
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

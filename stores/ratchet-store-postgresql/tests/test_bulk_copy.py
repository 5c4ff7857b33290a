"""The COPY path for large plain batches stores exactly what the array statement stores,
all-or-nothing, with the same conflict errors."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import BackoffPolicy, JobStatus, NewJob
from ratchet_store_postgresql import PostgreSQLJobStore, _enqueue
from ratchet_tck.store import new_job as tck_new_job

pytestmark = pytest.mark.server


BULK_DEFAULTS: dict[str, Any] = {
    "name": "tests.bulk",
    "target": "tests:bulk",
    "args_json": '[1, "é"]',
    "kwargs_json": '{"k": null}',
    "priority": 3,
    "max_retries": 7,
    "backoff": BackoffPolicy.FIXED,
    "backoff_ms": 250,
    "timeout_seconds": 1.5,
    "params": {"p": [1, 2], "ü": "x"},
    "delay_seconds": 30.0,
}


def new_job(**overrides: Any) -> NewJob:
    return tck_new_job(**(BULK_DEFAULTS | overrides))


def stored(store: PostgreSQLJobStore, job_id: str) -> dict[str, Any]:
    """Every field that does not depend on the id or the moment."""
    job = store.get_job(job_id)
    assert job is not None
    fields = {field.name: getattr(job, field.name) for field in dataclasses.fields(job)}
    return {
        key: value
        for key, value in fields.items()
        if key not in {"id", "created_at", "updated_at", "scheduled_at"}
    }


def test_a_large_plain_batch_goes_by_copy() -> None:
    plain = [new_job() for _ in range(_enqueue.COPY_THRESHOLD)]
    assert _enqueue.needs_transaction(plain)
    assert not _enqueue.needs_transaction(plain[:-1])
    assert not _enqueue.needs_transaction([*plain[:-1], new_job(tags=("t",))])


def test_copy_stores_what_the_array_statement_stores(store: PostgreSQLJobStore) -> None:
    copied = [new_job(business_key=f"bk-{n}") for n in range(200)]
    store.enqueue_many(copied)
    reference = new_job(business_key="bk-ref")
    store.enqueue_many([reference, new_job(tags=("force-the-array-form",))])
    expected = stored(store, reference.id) | {"business_key": None}
    for job in copied:
        assert stored(store, job.id) | {"business_key": None} == expected
    first = store.get_job(copied[0].id)
    assert first is not None
    assert first.status is JobStatus.PENDING and first.business_key == "bk-0"
    with psycopg.connect(store.conninfo) as conn:
        row = conn.execute(
            "SELECT count(*) FROM ratchet_job WHERE id = ANY(%s) AND (updated_at <> created_at"
            " OR tags <> '{}' OR attempts <> 0 OR crash_count <> 0 OR claim_seq <> 0)",
            ([job.id for job in copied],),
        ).fetchone()
    assert row == (0,)
    assert timedelta(seconds=29) < first.scheduled_at - first.created_at < timedelta(seconds=31)


def test_copy_keeps_explicit_due_times(store: PostgreSQLJobStore) -> None:
    due = datetime(2031, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)
    jobs = [new_job(scheduled_at=due, delay_seconds=0) for _ in range(100)]
    store.enqueue_many(jobs)
    assert {store.get_job(job.id).scheduled_at for job in jobs} == {due}  # type: ignore[union-attr]


def test_a_conflict_rejects_the_whole_copied_batch(store: PostgreSQLJobStore) -> None:
    holder = new_job(business_key="taken")
    store.enqueue(holder)
    batch = [new_job() for _ in range(150)] + [new_job(business_key="taken")]
    with pytest.raises(BusinessKeyConflictError) as caught:
        store.enqueue_many(batch)
    assert caught.value.key == "taken" and caught.value.existing_job_id == holder.id
    assert all(store.get_job(job.id) is None for job in batch)
    assert store.count_jobs()[JobStatus.PENDING] == 1


def test_copy_inside_the_callers_transaction(store: PostgreSQLJobStore) -> None:
    jobs = [new_job() for _ in range(100)]
    with psycopg.connect(store.conninfo) as conn:
        store.enqueue_many_in(conn, jobs)
        conn.rollback()
        assert all(store.get_job(job.id) is None for job in jobs)
        store.enqueue_many_in(conn, jobs)
        conn.commit()
    assert store.count_jobs()[JobStatus.PENDING] == 100

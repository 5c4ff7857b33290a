"""Batch, key, text and lease tests a SQL store package imports into its own test modules
(see :mod:`ratchet_tck.store.shared` for how and why), with the checks behind them.

They hold for any store, but they matter where a store splits a batch into several
statements, checks keys in a batch itself, cleans the text it stores, or keeps durations
in fixed units; they are not contracts of the suite. Hook: ``enqueue_chunk_size``, the
number of jobs the store writes in one statement at most (a batch longer than that goes in
several). They need the ``store`` fixture and carry no markers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import ExecutionStatus, JobStatus, JobStore
from ratchet_tck.store._base import new_job

__all__ = [
    "assert_error_text_is_recorded_as",
    "assert_params_and_tags_round_trip",
    "test_a_conflict_in_a_later_chunk_rejects_the_earlier_chunks",
    "test_a_key_twice_in_one_batch_is_refused_before_writing",
    "test_a_lease_far_below_a_microsecond_is_still_a_valid_lease",
    "test_business_key_conflict_in_a_batch_names_the_holder",
]


def test_a_conflict_in_a_later_chunk_rejects_the_earlier_chunks(
    store: JobStore, enqueue_chunk_size: int
) -> None:
    """A batch longer than one INSERT chunk is still one transaction: a used key in the
    second chunk leaves no job and no key of the first chunk behind."""
    holder = new_job(idempotency_key="used")
    store.enqueue(holder)
    batch = [new_job(idempotency_key=f"k{n}") for n in range(enqueue_chunk_size + 10)]
    batch[-1] = new_job(idempotency_key="used")
    with pytest.raises(DuplicateIdempotencyKeyError) as info:
        store.enqueue_many(batch)
    assert info.value.existing_job_id == holder.id
    assert store.count_jobs()[JobStatus.PENDING] == 1
    assert store.find_job_id_by_idempotency_key("k0") is None


def test_business_key_conflict_in_a_batch_names_the_holder(store: JobStore) -> None:
    holder = new_job(business_key="invoice-9")
    store.enqueue(holder)
    with pytest.raises(BusinessKeyConflictError) as info:
        store.enqueue_many([new_job(business_key="other"), new_job(business_key="invoice-9")])
    assert (info.value.key, info.value.existing_job_id) == ("invoice-9", holder.id)
    assert store.find_active_job_by_business_key("other") is None


@pytest.mark.parametrize("kind", ["idempotency_key", "business_key"])
def test_a_key_twice_in_one_batch_is_refused_before_writing(store: JobStore, kind: str) -> None:
    with pytest.raises((DuplicateIdempotencyKeyError, BusinessKeyConflictError)):
        store.enqueue_many([new_job(**{kind: "same"}), new_job(**{kind: "same"})])
    assert sum(store.count_jobs().values()) == 0


def test_a_lease_far_below_a_microsecond_is_still_a_valid_lease(store: JobStore) -> None:
    """Durations are kept in whole microseconds; a smaller TTL becomes one microsecond
    rather than zero (which would violate expires_at > acquired_at)."""
    assert store.try_lock("tiny", 1e-9, "a")
    assert store.renew_lock("tiny", 60, "a") in (True, False)
    assert store.try_lock("tiny", 60, "a")


def assert_error_text_is_recorded_as(store: JobStore, error: str, recorded: str) -> None:
    """Failing a fresh job with ``error`` succeeds (an outcome must never fail on its
    message: the job would stay RUNNING on a live node forever) and stores ``recorded`` as
    the job's last error and its execution's message."""
    store.enqueue(new_job())
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert store.fail_job(claimed.id, claimed.claim_seq, error=error)
    job = store.get_job(claimed.id)
    assert job is not None and job.last_error == recorded
    [execution] = store.list_executions(claimed.id)
    assert (execution.status, execution.message) == (ExecutionStatus.FAILED, recorded)


def assert_params_and_tags_round_trip(
    store: JobStore, params: Mapping[str, Any], tags: Sequence[str]
) -> None:
    """A job with ``params`` and ``tags`` reads back with both, in order, is found by its
    last tag, and is claimed with its params."""
    job = new_job(params=dict(params), tags=tuple(tags))
    store.enqueue(job)
    got = store.get_job(job.id)
    assert got is not None and got.params == params and got.tags == tuple(tags)
    assert [j.id for j in store.list_jobs(tag=tags[-1])] == [job.id]
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert claimed.params == params

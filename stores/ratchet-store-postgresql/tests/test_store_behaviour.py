"""PostgreSQL-specific behaviour beyond the kit: chunked batches stay all-or-nothing,
outcome text is always storable, and native types round-trip."""

from __future__ import annotations

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import ExecutionStatus, JobStatus
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._enqueue import CHUNK_SIZE
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server


def test_a_conflict_in_a_later_chunk_rejects_the_earlier_chunks(store: PostgreSQLJobStore) -> None:
    """A batch longer than one INSERT chunk is still one transaction: a used key in the
    second chunk leaves no job and no key of the first chunk behind."""
    holder = new_job(idempotency_key="used")
    store.enqueue(holder)
    batch = [new_job(idempotency_key=f"k{n}") for n in range(CHUNK_SIZE + 10)]
    batch[-1] = new_job(idempotency_key="used")
    with pytest.raises(DuplicateIdempotencyKeyError) as info:
        store.enqueue_many(batch)
    assert info.value.existing_job_id == holder.id
    assert store.count_jobs()[JobStatus.PENDING] == 1
    assert store.find_job_id_by_idempotency_key("k0") is None


def test_business_key_conflict_in_a_batch_names_the_holder(store: PostgreSQLJobStore) -> None:
    holder = new_job(business_key="invoice-9")
    store.enqueue(holder)
    with pytest.raises(BusinessKeyConflictError) as info:
        store.enqueue_many([new_job(business_key="other"), new_job(business_key="invoice-9")])
    assert (info.value.key, info.value.existing_job_id) == ("invoice-9", holder.id)
    assert store.find_active_job_by_business_key("other") is None


@pytest.mark.parametrize("kind", ["idempotency_key", "business_key"])
def test_a_key_twice_in_one_batch_is_refused_before_writing(
    store: PostgreSQLJobStore, kind: str
) -> None:
    with pytest.raises((DuplicateIdempotencyKeyError, BusinessKeyConflictError)):
        store.enqueue_many([new_job(**{kind: "same"}), new_job(**{kind: "same"})])
    assert sum(store.count_jobs().values()) == 0


def test_an_error_text_with_nul_characters_is_still_recorded(store: PostgreSQLJobStore) -> None:
    """PostgreSQL text cannot hold U+0000; the outcome must not fail because of it (the job
    would stay RUNNING on a live node forever). NULs become U+FFFD."""
    store.enqueue(new_job())
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert store.fail_job(claimed.id, claimed.claim_seq, error="bad\x00byte")
    job = store.get_job(claimed.id)
    assert job is not None and job.last_error == "bad\ufffdbyte"
    [execution] = store.list_executions(claimed.id)
    assert (execution.status, execution.message) == (ExecutionStatus.FAILED, "bad\ufffdbyte")


def test_params_and_tags_use_native_types(store: PostgreSQLJobStore) -> None:
    params = {"tenant": "açme", "nested": {"list": [1, 2.5, None, True]}, "n": 3}
    job = new_job(params=params, tags=("b", "a"))
    store.enqueue(job)
    got = store.get_job(job.id)
    assert got is not None and got.params == params and got.tags == ("b", "a")
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert claimed.params == params


def test_a_lease_far_below_a_microsecond_is_still_a_valid_lease(
    store: PostgreSQLJobStore,
) -> None:
    """Interval arithmetic keeps microseconds; a smaller TTL becomes one microsecond rather
    than zero (which would violate expires_at > acquired_at)."""
    assert store.try_lock("tiny", 1e-9, "a")
    assert store.renew_lock("tiny", 60, "a") in (True, False)
    assert store.try_lock("tiny", 60, "a")

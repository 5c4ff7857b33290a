"""BEHAVIORAL: idempotency keys (unique forever) and business keys (unique while active)."""

from __future__ import annotations

from functools import partial

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreFactory, StoreSuiteBase, new_job, raised, run_concurrently


class IdempotencyKeyContracts(StoreSuiteBase):
    @contract("idempotency-keys", Level.BEHAVIORAL)
    def test_duplicate_key_names_the_original_job(self, store: JobStore) -> None:
        """A second enqueue with the same key raises DuplicateIdempotencyKeyError carrying
        the original job's id, and stores nothing."""
        first = self.enqueue(store, idempotency_key="req-1")
        with pytest.raises(DuplicateIdempotencyKeyError) as info:
            self.enqueue(store, idempotency_key="req-1")
        assert info.value.existing_job_id == first
        assert store.count_jobs()[JobStatus.PENDING] == 1
        assert store.find_job_id_by_idempotency_key("req-1") == first
        assert store.find_job_id_by_idempotency_key("never-used") is None

    @contract("idempotency-keys", Level.BEHAVIORAL)
    def test_key_survives_completion_archive_and_purge(self, store: JobStore) -> None:
        """Keys are permanent: after the job succeeded and was archived, and after a failed
        job was purged, reuse still raises and the key still maps to the original id.

        On failure: the uniqueness lives on the job row (deleted by archive or purge);
        keep a separate, permanent key record.
        """
        done = self.running(store, idempotency_key="kept-1")
        store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        failed = self.running(store, idempotency_key="kept-2")
        store.fail_job(failed.id, failed.claim_seq, error="x")
        with pytest.raises(DuplicateIdempotencyKeyError):
            self.enqueue(store, idempotency_key="kept-1")
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) == 2
        assert store.get_job(done.id) is None
        assert store.purge_failed_jobs(older_than_seconds=0) == 0  # already archived
        for key, original in (("kept-1", done.id), ("kept-2", failed.id)):
            assert store.find_job_id_by_idempotency_key(key) == original
            with pytest.raises(DuplicateIdempotencyKeyError):
                self.enqueue(store, idempotency_key=key)
        purged = self.running(store, idempotency_key="kept-3")
        store.fail_job(purged.id, purged.claim_seq, error="x")
        self.sleep_past(0.05)
        assert store.purge_failed_jobs(older_than_seconds=0) == 1
        with pytest.raises(DuplicateIdempotencyKeyError):
            self.enqueue(store, idempotency_key="kept-3")

    @contract("idempotency-keys", Level.BEHAVIORAL)
    def test_concurrent_enqueues_with_one_key_have_one_winner(self, stores: StoreFactory) -> None:
        """Eight store instances enqueue the same key at once: exactly one succeeds; the
        others raise DuplicateIdempotencyKeyError (nothing else)."""
        nodes = [stores() for _ in range(8)]
        results = run_concurrently(
            [partial(s.enqueue, new_job(idempotency_key="race")) for s in nodes]
        )
        errors = raised(results)
        assert len(errors) == 7, f"{8 - len(errors)} enqueues succeeded"
        assert all(isinstance(e, DuplicateIdempotencyKeyError) for e in errors), errors
        assert nodes[0].count_jobs()[JobStatus.PENDING] == 1


class BusinessKeyContracts(StoreSuiteBase):
    @contract("business-keys", Level.BEHAVIORAL)
    def test_key_is_held_while_pending_and_running(self, store: JobStore) -> None:
        """A PENDING or RUNNING holder makes a second enqueue raise BusinessKeyConflictError
        naming the holder; ``find_active_job_by_business_key`` returns the holder."""
        holder = self.enqueue(store, business_key="order-1")
        with pytest.raises(BusinessKeyConflictError) as info:
            self.enqueue(store, business_key="order-1")
        assert info.value.existing_job_id == holder
        self.claim(store, holder)
        with pytest.raises(BusinessKeyConflictError):
            self.enqueue(store, business_key="order-1")
        active = store.find_active_job_by_business_key("order-1")
        assert active is not None and active.id == holder and active.status is JobStatus.RUNNING
        assert store.find_active_job_by_business_key("other") is None
        self.enqueue(store, business_key="order-2")  # distinct keys are independent

    @pytest.mark.parametrize("ending", ["SUCCEEDED", "FAILED", "CANCELED"])
    @contract("business-keys", Level.BEHAVIORAL)
    def test_key_is_released_when_the_job_ends(self, store: JobStore, ending: str) -> None:
        """At SUCCEEDED, FAILED or CANCELED the key is free for a new job, and not before.

        On failure: the uniqueness index or reservation does not follow the status.
        """
        if ending == "CANCELED":
            holder = self.enqueue(store, business_key="k")
            store.cancel_job(holder)
        else:
            job = self.running(store, business_key="k")
            if ending == "SUCCEEDED":
                store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
            else:
                store.fail_job(job.id, job.claim_seq, error="x")
        assert store.find_active_job_by_business_key("k") is None
        replacement = self.enqueue(store, business_key="k")
        assert store.find_active_job_by_business_key("k").id == replacement  # type: ignore[union-attr]

    @contract("business-keys", Level.BEHAVIORAL)
    def test_retry_of_a_failed_job_reserves_its_key_again(self, store: JobStore) -> None:
        """``retry_failed_job`` re-reserves the key; when another active job took it
        meanwhile, it raises BusinessKeyConflictError and the job stays FAILED."""
        job = self.running(store, business_key="k")
        store.fail_job(job.id, job.claim_seq, error="x")
        taker = self.enqueue(store, business_key="k")
        with pytest.raises(BusinessKeyConflictError):
            store.retry_failed_job(job.id)
        assert self.get(store, job.id).status is JobStatus.FAILED
        store.cancel_job(taker)
        assert store.retry_failed_job(job.id)
        with pytest.raises(BusinessKeyConflictError):
            self.enqueue(store, business_key="k")

    @contract("business-keys", Level.BEHAVIORAL)
    def test_retry_for_a_retry_keeps_the_key(self, store: JobStore) -> None:
        """A job waiting for its next attempt (retry scheduled) still holds its key."""
        job = self.running(store, business_key="k")
        store.schedule_retry(job.id, job.claim_seq, error="x", delay_seconds=60)
        with pytest.raises(BusinessKeyConflictError):
            self.enqueue(store, business_key="k")

    @contract("business-keys", Level.BEHAVIORAL)
    def test_concurrent_enqueues_with_one_business_key_have_one_winner(
        self, stores: StoreFactory
    ) -> None:
        """Eight store instances enqueue the same business key at once: exactly one wins."""
        nodes = [stores() for _ in range(8)]
        results = run_concurrently(
            [partial(s.enqueue, new_job(business_key="race")) for s in nodes]
        )
        errors = raised(results)
        assert len(errors) == 7, f"{8 - len(errors)} enqueues succeeded"
        assert all(isinstance(e, BusinessKeyConflictError) for e in errors), errors

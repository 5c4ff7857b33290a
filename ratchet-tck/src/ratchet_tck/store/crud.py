"""CORE: create, read and query jobs; bulk enqueue."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ratchet.errors import DuplicateIdempotencyKeyError
from ratchet.spi import BackoffPolicy, JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase, aware, new_job


class CrudContracts(StoreSuiteBase):
    @contract("crud", Level.CORE)
    def test_enqueue_round_trips_every_field(self, store: JobStore) -> None:
        """Every field given to ``enqueue`` reads back unchanged from ``get_job``.

        On failure: compare the column types (timestamps must keep microseconds or at
        least milliseconds and stay UTC; JSON must round-trip non-ASCII text).
        """
        scheduled = datetime(2030, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
        job = new_job(
            name="billing.refund",
            target="billing.jobs:refund",
            args_json=json.dumps([1, "zwei", {"drei": 3.5}, None, "€"], ensure_ascii=False),
            kwargs_json=json.dumps({"flag": True, "list": [1, 2]}),
            priority=4,
            max_retries=7,
            backoff=BackoffPolicy.FIXED,
            backoff_ms=2500,
            timeout_seconds=12.5,
            business_key="refund-42",
            idempotency_key="request-42",
            tags=("billing", "eu"),
            params={"tenant": "acme", "n": 3},
            scheduled_at=scheduled,
        )
        store.enqueue(job)
        got = self.get(store, job.id)
        assert (got.name, got.target) == ("billing.refund", "billing.jobs:refund")
        assert got.args == (1, "zwei", {"drei": 3.5}, None, "€")
        assert got.kwargs == {"flag": True, "list": [1, 2]}
        assert (got.priority, got.max_retries, got.backoff, got.backoff_ms) == (
            4,
            7,
            BackoffPolicy.FIXED,
            2500,
        )
        assert got.timeout_seconds == 12.5
        assert (got.business_key, got.idempotency_key) == ("refund-42", "request-42")
        assert set(got.tags) == {"billing", "eu"}
        assert got.params == {"tenant": "acme", "n": 3}
        assert abs((got.scheduled_at - scheduled).total_seconds()) < 0.002
        assert (got.status, got.attempts, got.crash_count, got.claim_seq, got.owner) == (
            JobStatus.PENDING,
            0,
            0,
            0,
            None,
        )
        assert (got.result, got.result_type, got.last_error) == (None, None, None)
        assert got.started_at is None and got.finished_at is None and got.claimed_at is None
        assert aware(got.created_at) and aware(got.scheduled_at)
        assert abs((got.created_at - store.database_time()).total_seconds()) < 5

    @contract("crud", Level.CORE)
    def test_delay_is_added_to_the_database_clock(self, store: JobStore) -> None:
        """``scheduled_at=None`` with ``delay_seconds`` is due at database-now + delay."""
        job_id = self.enqueue(store, delay_seconds=3600)
        wait = (self.get(store, job_id).scheduled_at - store.database_time()).total_seconds()
        assert 3590 < wait <= 3600.5

    @contract("crud", Level.CORE)
    def test_unknown_id_reads_as_none(self, store: JobStore) -> None:
        """``get_job`` of an id never stored returns ``None`` (not an exception)."""
        assert store.get_job("00000000-0000-0000-0000-000000000000") is None
        assert store.list_executions("00000000-0000-0000-0000-000000000000") == []

    @contract("crud", Level.CORE)
    def test_large_multibyte_payload_and_result_round_trip(self, store: JobStore) -> None:
        """128 K two-byte characters survive in arguments and in the result.

        On failure: a column is too narrow (VARCHAR) or counts bytes, not characters.
        """
        text = "é" * 131_072
        job_id = self.enqueue(store, args_json=json.dumps([text], ensure_ascii=False))
        assert self.get(store, job_id).args == (text,)
        claimed = self.claim(store, job_id)
        result = json.dumps({"echo": text}, ensure_ascii=False)
        assert store.complete_job(job_id, claimed.claim_seq, result_json=result, result_type="dict")
        assert self.get(store, job_id).result == {"echo": text}

    @contract("crud", Level.CORE)
    def test_list_jobs_by_status_and_tag_newest_first(self, store: JobStore) -> None:
        """``list_jobs`` filters by status and tag, newest first, bounded by ``limit``."""
        first = self.enqueue(store, tags=("red",))
        self.sleep_past(0.01)  # distinct creation times make "newest first" well defined
        second = self.enqueue(store, tags=("red", "blue"))
        self.sleep_past(0.01)
        third = self.enqueue(store, tags=("blue",))
        assert store.cancel_job(third)
        assert [j.id for j in store.list_jobs()] == [third, second, first]
        assert [j.id for j in store.list_jobs(status=JobStatus.PENDING)] == [second, first]
        assert [j.id for j in store.list_jobs(tag="blue")] == [third, second]
        assert [j.id for j in store.list_jobs(tag="blue", status=JobStatus.CANCELED)] == [third]
        assert [j.id for j in store.list_jobs(limit=2)] == [third, second]
        assert store.list_jobs(tag="green") == []

    @contract("crud", Level.CORE)
    def test_count_jobs_by_status(self, store: JobStore) -> None:
        """``count_jobs`` counts live jobs per status, with zeros for absent statuses."""
        for _ in range(3):
            self.enqueue(store)
        self.running(store)
        counts = store.count_jobs()
        assert counts[JobStatus.PENDING] == 3 - 0 and counts[JobStatus.RUNNING] == 1
        assert counts[JobStatus.FAILED] == 0 and set(counts) == set(JobStatus)

    @contract("bulk", Level.CORE)
    def test_enqueue_many_persists_every_job(self, store: JobStore) -> None:
        """A bulk enqueue of 1,200 jobs stores all of them (past any 500-row chunking)."""
        jobs = [new_job(args_json=json.dumps([n])) for n in range(1200)]
        store.enqueue_many(jobs)
        assert store.count_jobs()[JobStatus.PENDING] == 1200
        assert self.get(store, jobs[777].id).args == (777,)
        store.enqueue_many([])

    @contract("bulk", Level.CORE)
    def test_enqueue_many_is_all_or_nothing(self, store: JobStore) -> None:
        """One conflicting job rejects the whole batch: no job and no key stays behind.

        On failure: the batch is not one transaction, or keys are reserved before the
        conflicting row is checked and not rolled back.
        """
        self.enqueue(store, idempotency_key="taken")
        batch = [
            new_job(idempotency_key="first-of-batch"),
            new_job(idempotency_key="taken"),
            new_job(idempotency_key="last-of-batch"),
        ]
        with pytest.raises(DuplicateIdempotencyKeyError):
            store.enqueue_many(batch)
        assert store.count_jobs()[JobStatus.PENDING] == 1
        assert store.find_job_id_by_idempotency_key("first-of-batch") is None
        store.enqueue(new_job(idempotency_key="first-of-batch"))

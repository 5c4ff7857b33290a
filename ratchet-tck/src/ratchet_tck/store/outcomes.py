"""CORE fencing and BEHAVIORAL outcomes: complete, fail, retry, release, cancel, retry_job."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ratchet.spi import ExecutionStatus, JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase

Outcome = Callable[[JobStore, str, int], bool]

OUTCOMES: dict[str, Outcome] = {
    "complete": lambda s, i, q: s.complete_job(i, q, result_json='"late"', result_type="str"),
    "fail": lambda s, i, q: s.fail_job(i, q, error="late failure"),
    "schedule_retry": lambda s, i, q: s.schedule_retry(i, q, error="late", delay_seconds=0),
    "release": lambda s, i, q: s.release_claim(i, q, message="late release"),
}


class FencingContracts(StoreSuiteBase):
    @pytest.mark.parametrize("outcome", sorted(OUTCOMES))
    @contract("fencing", Level.CORE)
    def test_stale_claim_sequence_changes_nothing(self, store: JobStore, outcome: str) -> None:
        """After the job was released and claimed again (claim 2), every outcome write that
        carries claim 1 returns ``False`` and leaves the job and its executions exactly as
        they were; with claim 2 the write succeeds.

        On failure: the UPDATE's WHERE clause must include ``claim_seq = :expected`` and
        ``status = 'RUNNING'``, and the rows-affected count must be what decides the result.
        """
        first = self.running(store)
        assert store.release_claim(first.id, first.claim_seq, message="recovered")
        second = self.claim(store, first.id, node="node-b")
        assert second.claim_seq == first.claim_seq + 1
        before = self.get(store, first.id)
        executions_before = store.list_executions(first.id)
        assert OUTCOMES[outcome](store, first.id, first.claim_seq) is False
        assert self.get(store, first.id) == before
        assert store.list_executions(first.id) == executions_before
        assert OUTCOMES[outcome](store, first.id, second.claim_seq) is True

    @pytest.mark.parametrize("outcome", sorted(OUTCOMES))
    @contract("fencing", Level.CORE)
    def test_outcome_for_a_job_that_is_not_running_changes_nothing(
        self, store: JobStore, outcome: str
    ) -> None:
        """Outcome writes for a PENDING job (never claimed, ``claim_seq`` 0) or an unknown
        id return ``False`` and change nothing."""
        job_id = self.enqueue(store)
        before = self.get(store, job_id)
        assert OUTCOMES[outcome](store, job_id, 0) is False
        assert self.get(store, job_id) == before
        assert OUTCOMES[outcome](store, "no-such-job", 1) is False

    @contract("fencing", Level.CORE)
    def test_a_completed_claim_cannot_complete_twice(self, store: JobStore) -> None:
        """The second completion with the same claim returns ``False``; attempts stay 1."""
        job = self.running(store)
        assert store.complete_job(job.id, job.claim_seq, result_json="1", result_type="int")
        assert not store.complete_job(job.id, job.claim_seq, result_json="2", result_type="int")
        assert not store.fail_job(job.id, job.claim_seq, error="x")
        got = self.get(store, job.id)
        assert (got.status, got.attempts, got.result) == (JobStatus.SUCCEEDED, 1, 1)


class OutcomeContracts(StoreSuiteBase):
    @contract("outcomes", Level.BEHAVIORAL)
    def test_complete_records_result_and_closes_the_attempt(self, store: JobStore) -> None:
        """SUCCEEDED, ``attempts + 1``, result and type stored, finish time set, owner
        cleared, execution closed SUCCEEDED."""
        job = self.running(store)
        assert store.complete_job(
            job.id, job.claim_seq, result_json='{"a": [1]}', result_type="dict"
        )
        got = self.get(store, job.id)
        assert (got.status, got.attempts, got.result, got.result_type) == (
            JobStatus.SUCCEEDED,
            1,
            {"a": [1]},
            "dict",
        )
        assert got.finished_at is not None and got.owner is None
        assert [e.status for e in store.list_executions(job.id)] == [ExecutionStatus.SUCCEEDED]
        none = self.running(store)
        assert store.complete_job(none.id, none.claim_seq, result_json=None, result_type=None)
        assert self.get(store, none.id).result is None

    @contract("outcomes", Level.BEHAVIORAL)
    def test_fail_dead_letters_with_the_full_error(self, store: JobStore) -> None:
        """FAILED with ``attempts + 1``; a 256 KB multibyte error is kept whole, both on the
        job and in the closed execution record."""
        job = self.running(store)
        error = "Traceback €\n" + "é" * 131_072
        assert store.fail_job(job.id, job.claim_seq, error=error)
        got = self.get(store, job.id)
        assert (got.status, got.attempts, got.last_error) == (JobStatus.FAILED, 1, error)
        [execution] = store.list_executions(job.id)
        assert (execution.status, execution.message) == (ExecutionStatus.FAILED, error)
        assert execution.finished_at is not None

    @contract("outcomes", Level.BEHAVIORAL)
    def test_schedule_retry_returns_to_pending_after_the_delay(self, store: JobStore) -> None:
        """PENDING again, ``attempts + 1``, error kept, not claimable before the delay (database
        clock), claimable after it, as attempt 2 with a new claim."""
        job = self.running(store)
        assert store.schedule_retry(job.id, job.claim_seq, error="boom", delay_seconds=3600)
        got = self.get(store, job.id)
        assert (got.status, got.attempts, got.last_error, got.owner) == (
            JobStatus.PENDING,
            1,
            "boom",
            None,
        )
        assert 3590 < (got.scheduled_at - store.database_time()).total_seconds() <= 3600.5
        assert self.claim_all(store) == []
        soon = self.running(store)
        assert store.schedule_retry(soon.id, soon.claim_seq, error="x", delay_seconds=0.2)
        self.sleep_past(0.4)
        again = self.claim(store, soon.id)
        assert (again.attempt, again.claim_seq) == (2, 2)
        assert [e.status for e in store.list_executions(soon.id)] == [
            ExecutionStatus.FAILED,
            ExecutionStatus.RUNNING,
        ]

    @contract("outcomes", Level.BEHAVIORAL)
    def test_release_charges_nothing(self, store: JobStore) -> None:
        """A released claim is PENDING and due, with attempts and crash count unchanged; its
        execution closes RELEASED (not FAILED: nothing went wrong) with the given message."""
        job = self.running(store)
        assert store.release_claim(job.id, job.claim_seq, message="shutting down")
        got = self.get(store, job.id)
        assert (got.status, got.attempts, got.crash_count, got.owner) == (
            JobStatus.PENDING,
            0,
            0,
            None,
        )
        [execution] = store.list_executions(job.id)
        assert (execution.status, execution.message) == (ExecutionStatus.RELEASED, "shutting down")
        assert self.claim(store, job.id).attempt == 1

    @contract("outcomes", Level.BEHAVIORAL)
    def test_cancel_only_from_pending(self, store: JobStore) -> None:
        """PENDING → CANCELED; ``False`` for running, finished and unknown jobs."""
        pending = self.enqueue(store)
        assert store.cancel_job(pending) is True
        assert self.get(store, pending).status is JobStatus.CANCELED
        assert store.cancel_job(pending) is False
        running = self.running(store)
        assert store.cancel_job(running.id) is False
        assert self.get(store, running.id).status is JobStatus.RUNNING
        assert store.cancel_job("no-such-job") is False

    @contract("outcomes", Level.BEHAVIORAL)
    def test_retry_failed_job_only_from_failed(self, store: JobStore) -> None:
        """FAILED → PENDING, due now, attempts 0, error cleared; ``False`` from any other state."""
        job = self.running(store)
        store.fail_job(job.id, job.claim_seq, error="dead")
        assert store.retry_failed_job(job.id) is True
        got = self.get(store, job.id)
        assert (got.status, got.attempts, got.last_error) == (JobStatus.PENDING, 0, None)
        assert got.scheduled_at <= store.database_time()
        assert store.retry_failed_job(job.id) is False  # PENDING now
        assert self.claim(store, job.id).attempt == 1
        assert store.retry_failed_job(job.id) is False  # RUNNING
        done = self.running(store)
        store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        assert store.retry_failed_job(done.id) is False
        assert store.retry_failed_job("no-such-job") is False

    @contract("outcomes", Level.BEHAVIORAL)
    def test_executions_record_every_attempt_in_order(self, store: JobStore) -> None:
        """Three claims of one job leave three records, oldest first, each with its attempt
        number, claim sequence, node and outcome."""
        job = self.running(store, node="n1")
        store.schedule_retry(job.id, job.claim_seq, error="one", delay_seconds=0)
        second = self.claim(store, job.id, node="n2")
        store.schedule_retry(job.id, second.claim_seq, error="two", delay_seconds=0)
        third = self.claim(store, job.id, node="n3")
        store.complete_job(job.id, third.claim_seq, result_json=json.dumps("ok"), result_type="str")
        records = store.list_executions(job.id)
        assert [(e.attempt, e.claim_seq, e.node_id, e.status, e.message) for e in records] == [
            (1, 1, "n1", ExecutionStatus.FAILED, "one"),
            (2, 2, "n2", ExecutionStatus.FAILED, "two"),
            (3, 3, "n3", ExecutionStatus.SUCCEEDED, None),
        ]
        assert all(e.finished_at is not None and e.finished_at >= e.started_at for e in records)

    @contract("outcomes", Level.BEHAVIORAL)
    def test_late_outcome_updates_only_a_superseded_execution(self, store: JobStore) -> None:
        """``record_late_outcome`` rewrites the record of a claim whose job moved on, and
        refuses (``False``) for the claim that is currently running; the job row is never
        touched."""
        job = self.running(store)
        store.release_claim(job.id, job.claim_seq, message="released")
        current = self.claim(store, job.id)
        before = self.get(store, job.id)
        assert store.record_late_outcome(job.id, job.claim_seq, succeeded=True, message="late ok")
        # The same write again matches the row without changing it: still True (a store
        # that counts changed rather than matched rows would say False here).
        assert store.record_late_outcome(job.id, job.claim_seq, succeeded=True, message="late ok")
        assert not store.record_late_outcome(job.id, current.claim_seq, succeeded=True, message="x")
        first, second = store.list_executions(job.id)
        assert (first.status, first.message) == (ExecutionStatus.SUCCEEDED, "late ok")
        assert second.status is ExecutionStatus.RUNNING
        assert self.get(store, job.id) == before

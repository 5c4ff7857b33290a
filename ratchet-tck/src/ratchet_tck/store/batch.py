"""Batched completion (``SupportsBatchCompletion``): the same fence per row as one at a time.

N/A for stores without the capability: the worker then records each success alone.
"""

from __future__ import annotations

import json
import time
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any

import pytest

from ratchet.spi import (
    Completion,
    ExecutionStatus,
    Job,
    JobStatus,
    JobStore,
    SupportsBatchCompletion,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreFactory, StoreSuiteBase, run_concurrently

# Fields that differ between two jobs by nature (times compare by presence).
_OWN_PER_JOB = {"id"}
_SLACK = timedelta(seconds=1)


def _comparable(value: Any) -> Any:
    """Times compare by presence only (the moments differ); everything else as it is."""
    return value is not None if isinstance(value, datetime) else value


def batch_store(store: JobStore) -> SupportsBatchCompletion:
    if not isinstance(store, SupportsBatchCompletion):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsBatchCompletion")
    return store


def done(job_id: str, claim_seq: int, result: str | None = None) -> Completion:
    return Completion(
        job_id=job_id,
        claim_seq=claim_seq,
        result_json=result,
        result_type=None if result is None else "str",
    )


class BatchCompletionContracts(StoreSuiteBase):
    @contract("batch completion", Level.CORE)
    def test_each_row_of_a_batch_is_fenced_on_its_own(self, store: JobStore) -> None:
        """One batch holding two current claims, a stale claim (the job was released and
        claimed again), a PENDING job and an unknown id returns ``[True, False, True, False,
        False]``: the current claims are SUCCEEDED with their own results, and the stale,
        pending and unknown rows are exactly as before, executions included.

        On failure: every row of the batched write needs its own ``status = 'RUNNING' AND
        claim_seq = :expected`` condition, and the answer per row must come from which rows
        matched, not from the batch's total.
        """
        batch = batch_store(store)
        first = self.running(store)
        stale = self.running(store)
        assert store.release_claim(stale.id, stale.claim_seq, message="recovered")
        current = self.claim(store, stale.id, node="node-b")
        second = self.running(store)
        pending = self.enqueue(store)
        untouched = {job_id: self.get(store, job_id) for job_id in (stale.id, pending)}
        executions = store.list_executions(stale.id)

        flags = batch.complete_jobs(
            [
                done(first.id, first.claim_seq, '"one"'),
                done(stale.id, stale.claim_seq, '"late"'),
                done(second.id, second.claim_seq, '"two"'),
                done(pending, 0, '"never"'),
                done("no-such-job", 1, '"never"'),
            ]
        )

        assert flags == [True, False, True, False, False]
        assert (self.get(store, first.id).status, self.get(store, first.id).result) == (
            JobStatus.SUCCEEDED,
            "one",
        )
        assert (self.get(store, second.id).status, self.get(store, second.id).result) == (
            JobStatus.SUCCEEDED,
            "two",
        )
        for job_id, before in untouched.items():
            assert self.get(store, job_id) == before
        assert store.list_executions(stale.id) == executions
        assert batch.complete_jobs([done(stale.id, current.claim_seq)]) == [True]

    @contract("batch completion", Level.CORE)
    def test_a_batched_completion_is_a_full_completion(self, store: JobStore) -> None:
        """Each recorded row is what ``complete_job`` leaves: SUCCEEDED, ``attempts + 1``,
        finish time set, owner cleared, execution closed SUCCEEDED, business key released;
        a second batch with the same claims records nothing. An empty batch returns ``[]``."""
        batch = batch_store(store)
        assert batch.complete_jobs([]) == []
        jobs = [self.running(store, business_key=f"batch-{n}") for n in range(3)]
        assert batch.complete_jobs([done(j.id, j.claim_seq) for j in jobs]) == [True] * 3
        for job in jobs:
            got = self.get(store, job.id)
            assert (got.status, got.attempts, got.owner, got.result) == (
                JobStatus.SUCCEEDED,
                1,
                None,
                None,
            )
            assert got.finished_at is not None
            assert [e.status for e in store.list_executions(job.id)] == [ExecutionStatus.SUCCEEDED]
            self.enqueue(store, business_key=job.business_key)  # the key is free again
        assert batch.complete_jobs([done(j.id, j.claim_seq) for j in jobs]) == [False] * 3

    @contract("batch completion", Level.CORE)
    def test_a_batched_completion_stores_what_complete_job_stores(self, store: JobStore) -> None:
        """Two identical claims, one completed by ``complete_job`` and one by
        ``complete_jobs`` with the same result: the two rows agree field by field (status,
        attempts, result, result type, owner, error, crash count, claim sequence, tags,
        which times are set) and so do their execution records; each finish time lies in
        the database-clock window of its write.

        On failure: the batch statement was written separately from the single one and
        misses a column (the result type, the finish time, ``attempts + 1``, the owner).
        """
        batch = batch_store(store)
        result = json.dumps({"answer": [42, "é"], "none": None}, ensure_ascii=False)
        claims = [self.running(store, tags=("same",), params={"p": 1}) for _ in range(2)]
        before = store.database_time()
        assert store.complete_job(
            claims[0].id, claims[0].claim_seq, result_json=result, result_type="builtins.dict"
        )
        assert batch.complete_jobs(
            [
                Completion(
                    job_id=claims[1].id,
                    claim_seq=claims[1].claim_seq,
                    result_json=result,
                    result_type="builtins.dict",
                )
            ]
        ) == [True]
        after = store.database_time()
        single, batched = (self.get(store, claim.id) for claim in claims)
        differing = {
            name: (getattr(single, name), getattr(batched, name))
            for name in (f.name for f in fields(Job))
            if name not in _OWN_PER_JOB
            and _comparable(getattr(single, name)) != _comparable(getattr(batched, name))
        }
        assert not differing, f"complete_job vs complete_jobs: {differing}"
        executions = [
            [
                (e.claim_seq, e.attempt, e.node_id, e.status, e.message, e.finished_at is not None)
                for e in store.list_executions(claim.id)
            ]
            for claim in claims
        ]
        assert executions[0] == executions[1], "the execution records differ"
        for job in (single, batched):
            assert job.finished_at is not None
            assert before - _SLACK <= job.finished_at <= after + _SLACK, "finish time off the clock"

    @contract("batch completion", Level.ADVANCED)
    def test_a_batch_racing_a_takeover_never_records_both(self, stores: StoreFactory) -> None:
        """While one node completes 40 of its claims in batches of 8, another store instance
        takes the same jobs over one by one (releases the claim and claims the job again,
        as recovery and another node would). Afterwards every job is either SUCCEEDED, with
        the batch reporting ``True`` and the takeover ``False``, or RUNNING under node-b's
        newer claim, with the batch reporting ``False``; never both, never neither. Three
        rounds: the two sides meet at a different job each time, so a store that is only
        unfenced in a narrow window is caught."""
        store, other = stores(), stores()
        batch = batch_store(store)
        for _ in range(3):
            self._race_batch_against_takeover(store, other, batch)

    def _race_batch_against_takeover(
        self, store: JobStore, other: JobStore, batch: SupportsBatchCompletion
    ) -> None:
        jobs = [self.running(store) for _ in range(40)]
        chunks = [jobs[n : n + 8] for n in range(0, len(jobs), 8)]

        def take_over(job_id: str, claim_seq: int) -> bool:
            if not other.release_claim(job_id, claim_seq, message="recovered"):
                return False
            # SKIP LOCKED may pass over the row while the batch holds its lock: try again.
            deadline = time.monotonic() + 10
            while not (again := self.claim_all(other, "node-b", limit=1)):
                assert time.monotonic() < deadline, f"released job {job_id} never claimable"
                time.sleep(0.002)
            assert again[0].id == job_id, "another job was due"
            return True

        results = run_concurrently(
            [
                lambda: [
                    flag
                    for chunk in chunks
                    for flag in batch.complete_jobs([done(j.id, j.claim_seq) for j in chunk])
                ],
                lambda: [take_over(j.id, j.claim_seq) for j in reversed(jobs)],
            ]
        )
        completed, taken = results[0], results[1]
        assert not isinstance(completed, BaseException), completed
        assert not isinstance(taken, BaseException), taken
        for job, was_completed, was_taken in zip(jobs, completed, reversed(taken), strict=True):
            assert was_completed != was_taken, f"job {job.id}: both or neither recorded"
            got = self.get(store, job.id)
            if was_completed:
                assert got.status is JobStatus.SUCCEEDED
            else:
                assert (got.status, got.owner) == (JobStatus.RUNNING, "node-b")

"""Chains (``SupportsChains``): a job enqueued with ``depends_on`` waits (WAITING, never
claimed) until the job it depends on succeeds; the success that releases it is one write
with the release; a failure or cancel of a step cancels the steps after it; and the
settling scan finishes what a crash between two writes left.

N/A for stores without the capability: there a job naming a predecessor is refused.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import (
    Completion,
    JobStatus,
    JobStore,
    SupportsBatchCompletion,
    SupportsChains,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    new_job,
    raised,
    run_concurrently,
)
from ratchet_tck.store.times import PRECISION, off_window


def chain_store(store: JobStore) -> SupportsChains:
    if not isinstance(store, SupportsChains):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsChains")
    return store


class ChainContracts(StoreSuiteBase):
    def chain(self, store: JobStore, length: int, **first: object) -> list[str]:
        """``length`` jobs enqueued in one batch, each depending on the one before it; the
        first is CRITICAL and an hour overdue (so ``running`` helpers claim it alone)."""
        chain_store(store)
        jobs = [new_job(priority=4, scheduled_at=self.past(store, 3600), **first)]
        for _ in range(length - 1):
            jobs.append(new_job(depends_on=jobs[-1].id))
        store.enqueue_many(jobs)
        return [job.id for job in jobs]

    def statuses(self, store: JobStore, ids: list[str]) -> list[JobStatus]:
        return [self.get(store, job_id).status for job_id in ids]

    @contract("chains", Level.CORE)
    def test_a_dependent_job_waits_unclaimed_and_names_its_predecessor(
        self, store: JobStore
    ) -> None:
        """A three-step chain in one batch: the first is PENDING, the others WAITING, each
        read back with ``depends_on`` naming the step before (the first ``None``);
        ``dependents`` lists the direct dependents only; claims take the first step only.

        On failure: store a job with ``depends_on`` as WAITING (claims read PENDING jobs
        only) and keep the link as ``Job.depends_on``.
        """
        chains = chain_store(store)
        first, second, third = self.chain(store, 3)
        assert self.statuses(store, [first, second, third]) == [
            JobStatus.PENDING,
            JobStatus.WAITING,
            JobStatus.WAITING,
        ]
        assert [self.get(store, j).depends_on for j in (first, second, third)] == [
            None,
            first,
            second,
        ]
        assert [job.id for job in chains.dependents(first)] == [second]
        assert [job.id for job in chains.dependents(third)] == []
        assert [job.id for job in self.claim_all(store)] == [first]
        assert self.claim_all(store) == [], "a WAITING step was claimed"

    @contract("chains", Level.CORE)
    def test_the_success_of_a_step_releases_the_next_in_the_same_write(
        self, store: JobStore
    ) -> None:
        """Completing the first step of a three-step chain makes the second PENDING, due
        at the database time of the completion, and claimable; the third still WAITS.
        Completing the second releases the third. No settling scan runs in between.

        On failure: the statement (or transaction) that records a success must also move
        the WAITING jobs whose ``depends_on`` is that job to PENDING with
        ``scheduled_at`` = database-now.
        """
        first, second, third = self.chain(store, 3)
        [claimed] = self.claim_all(store)
        self.sleep_past(0.05)  # a release that kept the enqueue time would show it
        before = store.database_time()
        assert store.complete_job(first, claimed.claim_seq, result_json="1", result_type="int")
        after = store.database_time()
        assert self.statuses(store, [second, third]) == [JobStatus.PENDING, JobStatus.WAITING]
        released = self.get(store, second)
        assert not off_window(released.scheduled_at, before, after, PRECISION), (
            f"released step due at {released.scheduled_at}, completed in [{before}, {after}]"
        )
        [step] = self.claim_all(store)
        assert step.id == second
        assert store.complete_job(second, step.claim_seq, result_json=None, result_type=None)
        assert self.get(store, third).status is JobStatus.PENDING

    @contract("chains", Level.CORE)
    def test_a_refused_or_failed_outcome_releases_nothing(self, store: JobStore) -> None:
        """A stale completion (an old ``claim_seq``), a retry and a failure of the first
        step leave the second WAITING.

        On failure: release dependents only when the success itself was recorded, and
        never on ``schedule_retry`` or ``fail_job``.
        """
        first, second = self.chain(store, 2, max_retries=3)
        [claimed] = self.claim_all(store)
        assert not store.complete_job(
            first, claimed.claim_seq + 1, result_json=None, result_type=None
        ), "a completion with a claim_seq that never existed was recorded"
        assert store.schedule_retry(first, claimed.claim_seq, error="boom", delay_seconds=0)
        assert self.get(store, second).status is JobStatus.WAITING, "released by a retry"
        [again] = self.claim_all(store)
        assert store.fail_job(first, again.claim_seq, error="boom")
        assert self.get(store, second).status is JobStatus.WAITING, "released by a failure"

    @contract("chains", Level.ADVANCED)
    def test_a_batch_of_completions_releases_each_ones_dependents(self, store: JobStore) -> None:
        """Two chains whose first steps complete in one ``complete_jobs`` call (with a
        stale completion beside them): both second steps are released, nothing else.

        On failure: the batch completion must run the release for every completion it
        recorded, in its own transaction.
        """
        if not isinstance(store, SupportsBatchCompletion):
            pytest.skip(f"{NA_PREFIX} the store does not offer SupportsBatchCompletion")
        one = self.chain(store, 2)
        two = self.chain(store, 2)
        claimed = {job.id: job for job in self.claim_all(store)}
        assert set(claimed) == {one[0], two[0]}
        answers = store.complete_jobs(
            [
                Completion(
                    job_id=one[0],
                    claim_seq=claimed[one[0]].claim_seq,
                    result_json=None,
                    result_type=None,
                ),
                Completion(
                    job_id=two[0],
                    claim_seq=claimed[two[0]].claim_seq,
                    result_json=None,
                    result_type=None,
                ),
            ]
        )
        assert answers == [True, True]
        assert self.statuses(store, [one[1], two[1]]) == [JobStatus.PENDING, JobStatus.PENDING]

    @contract("chains", Level.CORE)
    def test_cancel_dependents_cancels_every_later_step_and_nothing_else(
        self, store: JobStore
    ) -> None:
        """A four-step chain whose first step failed: ``cancel_dependents(first)`` cancels
        steps two to four (depth first, all of them, returned), with a ``finished_at``;
        a second call cancels nothing; a neighbouring chain is untouched.

        On failure: follow ``depends_on`` from step to step through WAITING jobs only,
        and cancel with a status guard (``status = 'WAITING'``).
        """
        chains = chain_store(store)
        steps = self.chain(store, 4)
        other = self.chain(store, 2)
        claimed = {job.id: job for job in self.claim_all(store)}
        assert store.fail_job(steps[0], claimed[steps[0]].claim_seq, error="boom")
        assert sorted(chains.cancel_dependents(steps[0])) == sorted(steps[1:])
        assert self.statuses(store, steps) == [JobStatus.FAILED] + [JobStatus.CANCELED] * 3
        assert all(self.get(store, j).finished_at is not None for j in steps[1:])
        assert chains.cancel_dependents(steps[0]) == []
        assert self.statuses(store, other) == [JobStatus.RUNNING, JobStatus.WAITING]

    @contract("chains", Level.CORE)
    def test_a_waiting_step_holds_its_key_and_cancel_job_takes_it(self, store: JobStore) -> None:
        """A WAITING step with a business key: another job with the key is refused;
        ``cancel_job`` cancels the WAITING step (``True``) and frees the key.

        On failure: WAITING must count as active wherever a business key is checked, and
        ``cancel_job`` must accept WAITING jobs.
        """
        first = new_job()
        second = new_job(depends_on=first.id, business_key="tck-chain-key")
        chain_store(store)
        store.enqueue_many([first, second])
        with pytest.raises(BusinessKeyConflictError):
            self.enqueue(store, business_key="tck-chain-key")
        assert store.cancel_job(second.id) is True
        assert self.get(store, second.id).status is JobStatus.CANCELED
        self.enqueue(store, business_key="tck-chain-key")

    @contract("chains", Level.ADVANCED)
    def test_settling_finishes_what_a_crash_between_writes_left(self, store: JobStore) -> None:
        """Steps left WAITING behind a SUCCEEDED, a FAILED and a CANCELED predecessor, as
        a crash between an outcome and its follow-up leaves them (made here by enqueueing
        each step after its predecessor finished): ``settle_waiting_jobs`` releases the
        first and cancels the other two; a step behind a PENDING job is untouched; a
        second call changes nothing.

        On failure: the scan must read WAITING jobs with a ``depends_on`` whose job is
        finished, release those behind a SUCCEEDED one and cancel the rest.
        """
        chains = chain_store(store)
        done, failed, canceled = (self.running(store) for _ in range(3))
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        assert store.fail_job(failed.id, failed.claim_seq, error="boom")
        assert store.release_claim(canceled.id, canceled.claim_seq, message="given back")
        assert store.cancel_job(canceled.id)
        pending = self.enqueue(store, scheduled_at=store.database_time() + timedelta(hours=2))
        behind = {
            name: new_job(depends_on=predecessor)
            for name, predecessor in (
                ("done", done.id),
                ("failed", failed.id),
                ("canceled", canceled.id),
                ("pending", pending),
            )
        }
        store.enqueue_many(list(behind.values()))
        assert chains.settle_waiting_jobs(limit=100) == 3
        assert self.get(store, behind["done"].id).status is JobStatus.PENDING
        assert self.get(store, behind["failed"].id).status is JobStatus.CANCELED
        assert self.get(store, behind["canceled"].id).status is JobStatus.CANCELED
        assert self.get(store, behind["pending"].id).status is JobStatus.WAITING
        assert chains.settle_waiting_jobs(limit=100) == 0

    @contract("chains", Level.ADVANCED)
    def test_settling_from_several_instances_changes_each_step_once(
        self, stores: StoreFactory
    ) -> None:
        """Forty steps left WAITING behind finished predecessors (half SUCCEEDED, half
        FAILED), settled by four store instances at once: their answers add up to forty,
        every step behind a success is PENDING and every other CANCELED.

        On failure: each release and cancel of the scan must be guarded by the step still
        being WAITING, and count only the rows it changed.
        """
        setup = stores()
        chains = chain_store(setup)
        behind: dict[str, JobStatus] = {}
        for index in range(_SETTLE_STEPS):
            ended = self.running(setup)
            if index % 2:
                assert setup.fail_job(ended.id, ended.claim_seq, error="boom")
            else:
                assert setup.complete_job(
                    ended.id, ended.claim_seq, result_json=None, result_type=None
                )
            step = new_job(depends_on=ended.id)
            setup.enqueue(step)
            behind[step.id] = JobStatus.CANCELED if index % 2 else JobStatus.PENDING
        settlers = [chain_store(stores()) for _ in range(_SETTLERS)]
        answers = run_concurrently(
            [partial(settler.settle_waiting_jobs, limit=_SETTLE_STEPS) for settler in settlers]
        )
        assert raised(answers) == [], raised(answers)
        assert sum(answers) == _SETTLE_STEPS, f"the settlers answered {answers}"
        assert {job_id: self.get(setup, job_id).status for job_id in behind} == behind
        assert chains.settle_waiting_jobs(limit=_SETTLE_STEPS) == 0


_SETTLE_STEPS = 40
_SETTLERS = 4

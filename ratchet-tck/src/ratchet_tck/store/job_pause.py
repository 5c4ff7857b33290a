"""Pausing single jobs (``SupportsJobPause``): a PENDING job becomes PAUSED, is passed over
by every claim until it is resumed, resumes with the schedule it had, and holds its
business key all the while; the cancels take it like a PENDING job.

N/A for stores without the capability: there no job can be paused.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import JobStatus, JobStore, SupportsJobPause, SupportsQueues
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    raised,
    run_concurrently,
)

_RACE_ROUNDS = 20


def later(store: JobStore) -> datetime:
    """Two hours after the database's now: a job due then is not claimed by the test."""
    return store.database_time() + timedelta(hours=2)


def pausing_store(store: JobStore) -> SupportsJobPause:
    if not isinstance(store, SupportsJobPause):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsJobPause")
    return store


class JobPauseContracts(StoreSuiteBase):
    @contract("job-pause", Level.CORE)
    def test_a_paused_job_is_not_claimed_until_resumed_with_its_schedule(
        self, store: JobStore
    ) -> None:
        """Two due jobs, the older one paused (``True``): it reads back PAUSED with its
        scheduled time, priority and attempts unchanged and is listed under PAUSED; claims
        (plain, and from its queue on a store with queues) take only the other one.
        Resumed (``True``), it is PENDING with the scheduled time it had and the next
        claim takes it.

        On failure: ``pause_job`` must set the status PAUSED (a claim reads PENDING jobs
        only) and touch nothing else; ``resume_job`` must set it back to PENDING without
        rescheduling.
        """
        pauser = pausing_store(store)
        older = self.enqueue(store, scheduled_at=self.past(store, 60))
        younger = self.enqueue(store, scheduled_at=self.past(store, 30))
        before = self.get(store, older)
        assert pauser.pause_job(older) is True
        paused = self.get(store, older)
        assert paused.status is JobStatus.PAUSED
        assert (paused.scheduled_at, paused.priority, paused.attempts) == (
            before.scheduled_at,
            before.priority,
            before.attempts,
        ), "a pause changed more than the status"
        assert [job.id for job in store.list_jobs(status=JobStatus.PAUSED)] == [older]
        if isinstance(store, SupportsQueues):
            from_queue = store.claim_queue_jobs(
                node_id="node-a", queues=["default"], limit=10, priority_boost_seconds=0
            )
            assert [job.id for job in from_queue] == [younger], "a claim from its queue"
        else:
            assert [job.id for job in self.claim_all(store)] == [younger]
        assert self.claim_all(store) == [], "a paused job was claimed"
        assert pauser.resume_job(older) is True
        resumed = self.get(store, older)
        assert (resumed.status, resumed.scheduled_at) == (JobStatus.PENDING, before.scheduled_at)
        assert [job.id for job in self.claim_all(store)] == [older]

    @contract("job-pause", Level.CORE)
    def test_only_a_pending_job_pauses_and_only_a_paused_one_resumes(self, store: JobStore) -> None:
        """``pause_job`` answers ``False`` and changes nothing for a job already PAUSED,
        RUNNING, SUCCEEDED or CANCELED, and for an unknown id (the running job's claim
        still completes); ``resume_job`` answers ``False`` for a PENDING job, a RUNNING
        one and an unknown id.

        On failure: both writes must be guarded by the status they leave (``WHERE status
        = 'PENDING'`` / ``'PAUSED'``) and answer from the row count.
        """
        pauser = pausing_store(store)
        pending = self.enqueue(store, scheduled_at=later(store))
        running = self.running(store)
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        canceled = self.enqueue(store, scheduled_at=later(store))
        assert store.cancel_job(canceled)
        assert pauser.resume_job(pending) is False, "resumed a PENDING job"
        assert pauser.pause_job(pending) is True
        assert pauser.pause_job(pending) is False, "paused a PAUSED job again"
        for job_id, status in (
            (running.id, JobStatus.RUNNING),
            (done.id, JobStatus.SUCCEEDED),
            (canceled, JobStatus.CANCELED),
        ):
            assert pauser.pause_job(job_id) is False, f"paused a {status.value} job"
            assert self.get(store, job_id).status is status
        assert pauser.resume_job(running.id) is False, "resumed a RUNNING job"
        assert pauser.pause_job("tck-no-such-job") is False
        assert pauser.resume_job("tck-no-such-job") is False
        assert store.complete_job(
            running.id, running.claim_seq, result_json=None, result_type=None
        ), "the running job's claim no longer completes"

    @contract("job-pause", Level.CORE)
    def test_a_paused_job_holds_its_business_key_until_canceled(self, store: JobStore) -> None:
        """A paused job with business key ``K``: an enqueue with ``K`` is refused naming
        it, and a DLQ retry of an earlier FAILED holder of ``K`` is refused too;
        ``cancel_job`` takes the paused job to CANCELED (``True``), and then ``K`` is free.

        On failure: PAUSED must count as active wherever a business key is checked (the
        unique index's predicate, the holder lookups, the retry's check), and
        ``cancel_job`` must accept PAUSED as it accepts PENDING.
        """
        pauser = pausing_store(store)
        failed = self.running(store, business_key="tck-pause-key")
        assert store.fail_job(failed.id, failed.claim_seq, error="boom")
        holder = self.enqueue(store, business_key="tck-pause-key", scheduled_at=later(store))
        assert pauser.pause_job(holder) is True
        with pytest.raises(BusinessKeyConflictError) as refused:
            self.enqueue(store, business_key="tck-pause-key")
        assert refused.value.existing_job_id == holder
        with pytest.raises(BusinessKeyConflictError):
            store.retry_failed_job(failed.id)
        assert self.get(store, failed.id).status is JobStatus.FAILED
        assert store.cancel_job(holder) is True, "a PAUSED job could not be canceled"
        assert self.get(store, holder).status is JobStatus.CANCELED
        assert pauser.resume_job(holder) is False, "a canceled job resumed"
        taker = self.enqueue(store, business_key="tck-pause-key")
        assert self.get(store, taker).status is JobStatus.PENDING

    @contract("job-pause", Level.CORE)
    def test_the_cancels_by_tag_and_by_business_key_take_paused_jobs(self, store: JobStore) -> None:
        """A paused job tagged ``t`` and one holding key ``K``: ``cancel_by_tag("t")`` and
        ``cancel_by_business_key("K")`` each count and cancel theirs, as for PENDING jobs.

        On failure: those cancels must select PENDING *and* PAUSED jobs.
        """
        pauser = pausing_store(store)
        tagged = self.enqueue(store, tags=("tck-pause-tag",))
        keyed = self.enqueue(store, business_key="tck-pause-cancel-key")
        assert pauser.pause_job(tagged) and pauser.pause_job(keyed)
        assert store.cancel_by_tag("tck-pause-tag") == 1
        assert store.cancel_by_business_key("tck-pause-cancel-key") == 1
        for job_id in (tagged, keyed):
            assert self.get(store, job_id).status is JobStatus.CANCELED

    @contract("job-pause", Level.ADVANCED)
    def test_a_pause_and_a_claim_of_the_same_job_exclude_each_other(
        self, stores: StoreFactory
    ) -> None:
        """Twenty rounds, each a due job that one store instance claims while another
        pauses it, released together: in every round exactly one wins. Either the claim
        returned it (the pause answered ``False``, the job is RUNNING) or the pause
        answered ``True`` (no claim returned it, the job is PAUSED).

        On failure: the pause must be one guarded write (``UPDATE ... WHERE status =
        'PENDING'``), never a read of the status followed by an unguarded write.
        """
        setup, claimer, pauser = stores(), stores(), stores()
        pausing_store(setup)
        rounds = threading.Barrier(2, timeout=60)
        jobs = [self.enqueue(setup, scheduled_at=self.past(setup, 60))]
        claimed: list[list[str]] = []
        paused: list[bool] = []

        def claim_each() -> None:
            for _ in range(_RACE_ROUNDS):
                rounds.wait()
                got = claimer.claim_due_jobs(node_id="node-a", limit=1, priority_boost_seconds=0)
                claimed.append([job.id for job in got])
                rounds.wait()

        def pause_each() -> None:
            for index in range(_RACE_ROUNDS):
                rounds.wait()
                paused.append(pausing_store(pauser).pause_job(jobs[index]))
                rounds.wait()
                jobs.append(self.enqueue(setup, scheduled_at=self.past(setup, 60)))

        results = run_concurrently([claim_each, pause_each])
        assert raised(results) == [], raised(results)
        for index in range(_RACE_ROUNDS):
            job_id = jobs[index]
            status = self.get(setup, job_id).status
            won_by_claim = job_id in claimed[index]
            assert won_by_claim != paused[index], (
                f"round {index}: claimed={won_by_claim}, pause answered {paused[index]}"
            )
            expected = JobStatus.RUNNING if won_by_claim else JobStatus.PAUSED
            assert status is expected, f"round {index}: {status.value}, expected {expected}"

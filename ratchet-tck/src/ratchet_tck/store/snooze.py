"""Snoozing (``SupportsSnooze``): a claim put back to the queue for later, uncharged, what a
job's ``raise Snooze(seconds)`` records.

N/A for stores without the capability: the engine records a snooze as a retry there.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import ExecutionStatus, JobStatus, JobStore, SupportsSnooze
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase, new_job
from ratchet_tck.store.times import PRECISION, off_window

# The delay of the due-time contract: long enough that a claim right after the write
# cannot find the job due, short enough to wait for.
_DELAY = 0.75


def snooze_store(store: JobStore) -> SupportsSnooze:
    if not isinstance(store, SupportsSnooze):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsSnooze")
    return store


class SnoozeContracts(StoreSuiteBase):
    @contract("snooze", Level.CORE)
    def test_a_snoozed_job_is_due_after_the_delay_on_the_database_clock(
        self, store: JobStore
    ) -> None:
        """Snoozed for 0.75 s, the job is PENDING, not claimable at once, due 0.75 s after
        the database time of the write, and claimable once that has passed, under
        ``claim_seq + 1`` and the same attempt number.

        On failure: ``scheduled_at`` must be the database's now plus the delay, as
        ``schedule_retry`` writes it (not the claim's old due time, not the process
        clock).
        """
        snoozer = snooze_store(store)
        before = store.database_time()
        job = self.running(store)
        assert snoozer.snooze_job(job.id, job.claim_seq, delay_seconds=_DELAY, message="later")
        after = store.database_time()
        got = self.get(store, job.id)
        assert got.status is JobStatus.PENDING, got.status
        assert self.claim_all(store) == [], f"a job snoozed for {_DELAY} s was due at once"
        due = got.scheduled_at - timedelta(seconds=_DELAY)
        assert not off_window(due, before, after, PRECISION), (
            f"snoozed for {_DELAY} s: due {got.scheduled_at}, expected {_DELAY} s after a "
            f"write between {before} and {after}"
        )
        self.sleep_past(_DELAY + 0.15)
        again = self.claim(store, job.id)
        assert (again.claim_seq, again.attempt) == (job.claim_seq + 1, job.attempt), again

    @contract("snooze", Level.CORE)
    def test_a_snooze_charges_nothing_and_keeps_the_key(self, store: JobStore) -> None:
        """After a failed attempt (``schedule_retry``) the job is claimed again and
        snoozed: ``attempts`` (1), ``crash_count`` and ``last_error`` stay as they were,
        the owner is cleared, and the business key stays held (a second job with the same
        key still conflicts). The snoozed claim's execution record closes RELEASED (not
        FAILED: nothing went wrong) with the message.

        On failure: the snooze's UPDATE must set only status, owner, ``claimed_at``,
        ``scheduled_at`` and ``updated_at`` (not ``attempts``, ``last_error`` or the key),
        and close the execution record as RELEASED with the given message.
        """
        snoozer = snooze_store(store)
        first = self.running(store, business_key="snooze-key")
        assert store.schedule_retry(first.id, first.claim_seq, error="boom", delay_seconds=0)
        second = self.claim(store, first.id)
        before = self.get(store, first.id)
        assert snoozer.snooze_job(
            second.id, second.claim_seq, delay_seconds=60, message="snoozed for 60 s"
        )
        got = self.get(store, first.id)
        assert (got.status, got.attempts, got.crash_count, got.last_error, got.owner) == (
            JobStatus.PENDING,
            1,
            before.crash_count,
            "boom",
            None,
        ), got
        assert got.business_key == "snooze-key", got.business_key
        with pytest.raises(BusinessKeyConflictError):
            store.enqueue(new_job(business_key="snooze-key"))
        executions = store.list_executions(first.id)
        assert [(e.claim_seq, e.status, e.message) for e in executions] == [
            (first.claim_seq, ExecutionStatus.FAILED, "boom"),
            (second.claim_seq, ExecutionStatus.RELEASED, "snoozed for 60 s"),
        ], executions
        assert executions[-1].finished_at is not None, "the snoozed execution was not closed"

    @contract("snooze", Level.CORE)
    def test_a_stale_or_finished_claim_cannot_snooze(self, store: JobStore) -> None:
        """A snooze carrying a superseded ``claim_seq`` (the job was released and claimed
        again), or for a job that is not RUNNING (pending, finished, unknown), returns
        ``False`` and changes neither the job nor its executions; with the current claim
        it returns ``True``.

        On failure: the UPDATE's WHERE clause must include ``status = 'RUNNING'`` and
        ``claim_seq = :claim_seq``, and the rows-affected count must decide the result.
        """
        snoozer = snooze_store(store)
        first = self.running(store)
        assert store.release_claim(first.id, first.claim_seq, message="recovered")
        second = self.claim(store, first.id, node="node-b")
        before = self.get(store, first.id)
        executions = store.list_executions(first.id)
        assert not snoozer.snooze_job(first.id, first.claim_seq, delay_seconds=60, message="x")
        assert self.get(store, first.id) == before, "a stale snooze changed the job"
        assert store.list_executions(first.id) == executions, "a stale snooze closed a record"
        pending = self.enqueue(store)
        pending_before = self.get(store, pending)
        assert not snoozer.snooze_job(pending, 0, delay_seconds=60, message="x")
        assert self.get(store, pending) == pending_before, "a snooze changed a PENDING job"
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        done_before = self.get(store, done.id)
        assert not snoozer.snooze_job(done.id, done.claim_seq, delay_seconds=60, message="x")
        assert self.get(store, done.id) == done_before, "a snooze changed a SUCCEEDED job"
        assert not snoozer.snooze_job("no-such-job", 1, delay_seconds=60, message="x")
        assert snoozer.snooze_job(first.id, second.claim_seq, delay_seconds=60, message="x")

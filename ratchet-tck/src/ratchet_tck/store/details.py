"""Details a caller reads back, found missing by mutation testing (ratchet-tck/MUTATION.md).

Each contract here was added because a mutant of the SQLite store survived the whole kit:
the key and holder a conflict error carries, the verdict a late outcome records, what
recovery, stale-record closing, archive and purge leave alone around the rows they
target, and that ``reset_for_tests`` empties what certification relies on being empty.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import (
    ExecutionStatus,
    JobStatus,
    JobStore,
    RecurringDefinition,
    SupportsTestReset,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase, new_job

GRACE = 0.3  # seconds; short, so the contracts stay fast


class DetailContracts(StoreSuiteBase):
    @contract("keys", Level.BEHAVIORAL)
    def test_enqueue_conflicts_name_the_key_and_its_holder(self, store: JobStore) -> None:
        """A reused idempotency key raises DuplicateIdempotencyKeyError, and a held business
        key BusinessKeyConflictError, each with ``key`` set to the key given and
        ``existing_job_id`` to the job that has it.

        On failure: build the error with ``key=`` the conflicting key (callers read it to
        tell which of their keys clashed), not ``None`` or another job's key.
        """
        first = self.enqueue(store, idempotency_key="req-7")
        holder = self.enqueue(store, business_key="order-7")
        with pytest.raises(DuplicateIdempotencyKeyError) as duplicate:
            self.enqueue(store, idempotency_key="req-7")
        assert (duplicate.value.key, duplicate.value.existing_job_id) == ("req-7", first)
        with pytest.raises(BusinessKeyConflictError) as conflict:
            self.enqueue(store, business_key="order-7")
        assert (conflict.value.key, conflict.value.existing_job_id) == ("order-7", holder)

    @contract("business-keys", Level.BEHAVIORAL)
    def test_retry_conflict_names_the_key_and_its_holder(self, store: JobStore) -> None:
        """``retry_failed_job`` of a FAILED job whose business key another active job took
        meanwhile raises BusinessKeyConflictError with ``key`` that business key and
        ``existing_job_id`` the taker's id.

        On failure: after the refused update, read the failed job's business key and the
        active holder of that key, and put both in the error (not ``None``, ``""`` or
        another column of the holder's row).
        """
        failed = self.running(store, business_key="invoice-9")
        store.fail_job(failed.id, failed.claim_seq, error="x")
        taker = self.enqueue(store, business_key="invoice-9")
        with pytest.raises(BusinessKeyConflictError) as conflict:
            store.retry_failed_job(failed.id)
        assert (conflict.value.key, conflict.value.existing_job_id) == ("invoice-9", taker)

    @contract("outcomes", Level.BEHAVIORAL)
    def test_a_late_failure_is_recorded_as_failed(self, store: JobStore) -> None:
        """``record_late_outcome(succeeded=False)`` on a superseded claim marks its
        execution record FAILED with the message; ``succeeded=True`` marks it SUCCEEDED.

        On failure: the record's status must follow ``succeeded``; a late failure stored
        as a success hides the crash from whoever reads the execution history.
        """
        job = self.running(store)
        store.release_claim(job.id, job.claim_seq, message="released")
        again = self.claim(store, job.id)
        store.release_claim(job.id, again.claim_seq, message="released")
        self.claim(store, job.id)
        assert store.record_late_outcome(job.id, job.claim_seq, succeeded=False, message="boom")
        assert store.record_late_outcome(job.id, again.claim_seq, succeeded=True, message="ok")
        first, second, _current = store.list_executions(job.id)
        assert (first.status, first.message) == (ExecutionStatus.FAILED, "boom")
        assert (second.status, second.message) == (ExecutionStatus.SUCCEEDED, "ok")

    @contract("recovery", Level.ADVANCED)
    def test_recovering_a_node_leaves_other_nodes_claims_alone(self, store: JobStore) -> None:
        """``recover_node_claims("me")`` with a crash limit of 0 disowns the exhausted claim
        of "me" only: a job "other" runs under the same ``claim_seq`` keeps its owner, its
        status and its open execution record.

        On failure: the statement that clears the owner of an exhausted claim must match
        on the job's id and its claim (``id AND status = 'RUNNING' AND claim_seq``), never
        on the claim sequence alone, which every job's first claim shares.
        """
        mine = self.running(store, node="me")
        theirs = self.running(store, node="other")
        assert mine.claim_seq == theirs.claim_seq, "both are first claims"
        recovery = store.recover_node_claims("me", max_crash_redeliveries=0, limit=10)
        assert recovery.exhausted == ((mine.id, mine.claim_seq),)
        assert self.get(store, mine.id).owner is None
        other = self.get(store, theirs.id)
        assert (other.status, other.owner) == (JobStatus.RUNNING, "other")
        assert store.list_executions(theirs.id)[0].status is ExecutionStatus.RUNNING

    @contract("recovery", Level.ADVANCED)
    def test_closing_stale_records_leaves_closed_and_live_ones_alone(self, store: JobStore) -> None:
        """With a running job, a succeeded job and a released job (all past the grace),
        ``close_stale_executions`` closes nothing: it returns 0, the running claim's record
        stays open, and the closed records keep their status and message.

        On failure: only a record that is still RUNNING while its own job (joined on the
        job id) is no longer RUNNING under that claim is stale; a closed record, or the
        record of another job's live claim, is never rewritten.
        """
        live = self.running(store)
        done = self.running(store)
        store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        released = self.running(store)
        store.release_claim(released.id, released.claim_seq, message="bye")
        time.sleep(GRACE + 0.2)
        before = {job.id: store.list_executions(job.id) for job in (live, done, released)}
        assert store.close_stale_executions(grace_seconds=GRACE, message="stale", limit=100) == 0
        after = {job.id: store.list_executions(job.id) for job in (live, done, released)}
        assert after == before

    @contract("retention", Level.ADVANCED)
    def test_archive_and_purge_leave_other_jobs_tags_alone(self, store: JobStore) -> None:
        """Archiving a succeeded job and purging a failed one, each tagged "shared", leaves
        the tags of a pending job: ``list_jobs(tag="shared")`` and ``list_jobs(tag="own")``
        still find it.

        On failure: the tag rows deleted with an archived or purged job must be that job's
        (``WHERE job_id = :id``), not every other job's.
        """
        keep = self.enqueue(store, tags=("shared", "own"), scheduled_at=_far_future())
        done = self.running(store, tags=("shared",))
        store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) == 1
        assert [job.id for job in store.list_jobs(tag="shared")] == [keep]
        failed = self.running(store, tags=("shared",))
        store.fail_job(failed.id, failed.claim_seq, error="x")
        self.sleep_past(0.05)
        assert store.purge_failed_jobs(older_than_seconds=0) == 1
        assert [job.id for job in store.list_jobs(tag="shared")] == [keep]
        assert [job.id for job in store.list_jobs(tag="own")] == [keep]

    @contract("jobs", Level.CORE)
    def test_list_jobs_returns_at_most_100_by_default(self, store: JobStore) -> None:
        """``list_jobs()`` without a ``limit`` returns the newest 100 of 101 jobs, the
        default the SPI's signature declares.

        On failure: keep ``limit: int = 100`` in ``list_jobs``'s signature.
        """
        store.enqueue_many([new_job() for _ in range(101)])
        assert len(store.list_jobs()) == 100

    @contract("test reset", Level.CORE)
    def test_reset_for_tests_empties_every_view(self, store: JobStore) -> None:
        """After ``reset_for_tests`` no job, idempotency key, business key, node, lock,
        recurring definition or fire is left: every view is empty, the key can be used
        again and another owner takes the lock. N/A without SupportsTestReset.

        On failure: ``ratchet-tck certify`` empties the store with this method between
        tests, so anything it leaves behind leaks into the next contract; delete the rows
        of every table (or collection) the store writes.
        """
        if not isinstance(store, SupportsTestReset):
            pytest.skip(f"{NA_PREFIX} the store does not offer SupportsTestReset")
        self.enqueue(store, idempotency_key="again", business_key="held", tags=("t",))
        self.running(store)
        store.register_node("node-a")
        assert store.try_lock("reset", 60, "before")
        nightly = RecurringDefinition(id="nightly", cron="0 3 * * *", name="n", target="m:f")
        store.save_recurring(nightly)
        fire = datetime(2030, 1, 1, tzinfo=UTC)
        store.enqueue_recurring_fire(new_job(recurring_id="nightly"), fire_time=fire)
        store.reset_for_tests()
        assert sum(store.count_jobs().values()) == 0
        assert store.list_jobs() == [] and store.list_jobs(tag="t") == []
        assert store.find_job_id_by_idempotency_key("again") is None
        assert store.find_active_job_by_business_key("held") is None
        assert store.list_nodes() == []
        assert store.list_recurring() == []
        assert store.last_recurring_fire("nightly") is None
        assert store.try_lock("reset", 60, "after"), "the lock survived the reset"
        self.enqueue(store, idempotency_key="again", business_key="held")


def _far_future() -> datetime:
    return datetime(2100, 1, 1, tzinfo=UTC)

"""Batches (``SupportsBatches``): a record (WAITING, never claimed) and its children,
stored in one write; the record completes once, when no child is left to run, with the
children counted; of two nodes finishing the last two children at once, one completes it;
the recovery scan finds a batch a crash left uncompleted.

N/A for stores without the capability: there a batch is refused.
"""

from __future__ import annotations

import json
from functools import partial

import pytest

from ratchet.spi import BatchCounts, JobStatus, JobStore, NewJob, SupportsBatches
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    new_job,
    raised,
    run_concurrently,
)


def batch_store(store: JobStore) -> SupportsBatches:
    if not isinstance(store, SupportsBatches):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsBatches")
    return store


class BatchRecordContracts(StoreSuiteBase):
    def batch(self, store: JobStore, children: int) -> tuple[str, list[str]]:
        """A batch record and ``children`` children (CRITICAL and an hour overdue, so the
        ``running`` helpers claim them first), enqueued in one write."""
        batch_store(store)
        record = new_job(name="tck.batch", batch_total=children)
        kids: list[NewJob] = [
            new_job(batch_id=record.id, priority=4, scheduled_at=self.past(store, 3600))
            for _ in range(children)
        ]
        store.enqueue_many([record, *kids])
        return record.id, [kid.id for kid in kids]

    def finish(self, store: JobStore, job_id: str, *, succeed: bool = True) -> None:
        """End the child ``job_id`` (claiming every due job first if it is not running)."""
        if self.get(store, job_id).status is JobStatus.PENDING:
            self.claim_all(store, limit=1000)
        claim_seq = self.get(store, job_id).claim_seq
        if succeed:
            assert store.complete_job(job_id, claim_seq, result_json=None, result_type=None)
        else:
            assert store.fail_job(job_id, claim_seq, error="boom")

    @contract("batches", Level.CORE)
    def test_a_batch_record_waits_unclaimed_and_its_children_run(self, store: JobStore) -> None:
        """A record with three children: the record is WAITING with ``batch_total`` 3 and
        never claimed; each child reads back with ``batch_id`` and is claimable;
        ``list_batches`` lists the record, ``batch_counts`` counts three active children.

        On failure: insert a job with ``batch_total`` as WAITING, keep ``batch_id`` and
        ``batch_total``, and count children by status through ``batch_id``.
        """
        batches = batch_store(store)
        record, kids = self.batch(store, 3)
        job = self.get(store, record)
        assert (job.status, job.batch_total, job.batch_id) == (JobStatus.WAITING, 3, None)
        assert [self.get(store, kid).batch_id for kid in kids] == [record] * 3
        assert sorted(job.id for job in self.claim_all(store)) == sorted(kids)
        assert batches.batch_counts(record) == BatchCounts(active=3)
        assert [job.id for job in batches.list_batches(limit=10)] == [record]
        assert batches.batch_counts("tck-no-such-batch") == BatchCounts()

    @contract("batches", Level.CORE)
    def test_a_batch_completes_once_when_its_last_child_ends(self, store: JobStore) -> None:
        """Three children: ``complete_batch`` answers ``None`` while one is active; after
        two succeeded and one failed for good it answers the counts and the record is
        FAILED with those counts as its result and a ``finished_at``; again it answers
        ``None``. A batch whose children all succeeded ends SUCCEEDED.

        On failure: probe for an active child first, then move the record from WAITING
        (guarded) with the counts, in one transaction.
        """
        batches = batch_store(store)
        record, kids = self.batch(store, 3)
        self.finish(store, kids[0])
        self.finish(store, kids[1])
        assert batches.complete_batch(record) is None, "completed with a child still active"
        assert self.get(store, record).status is JobStatus.WAITING
        self.finish(store, kids[2], succeed=False)
        counts = batches.complete_batch(record)
        assert counts == BatchCounts(succeeded=2, failed=1), counts
        job = self.get(store, record)
        assert job.status is JobStatus.FAILED and job.finished_at is not None
        assert job.result == json.loads(counts.to_json())
        assert batches.complete_batch(record) is None, "completed twice"
        clean, [only] = self.batch(store, 1)
        self.finish(store, only)
        assert batches.complete_batch(clean) == BatchCounts(succeeded=1)
        assert self.get(store, clean).status is JobStatus.SUCCEEDED

    @contract("batches", Level.CORE)
    def test_a_canceled_child_counts_and_an_unknown_batch_completes_nothing(
        self, store: JobStore
    ) -> None:
        """A child canceled before it ran counts as canceled (the record ends FAILED); a
        plain job's id and a missing id complete nothing.

        On failure: count CANCELED children as ended, and move only a record (a job with
        ``batch_total``) that is WAITING.
        """
        batches = batch_store(store)
        record, [kid] = self.batch(store, 1)
        assert store.cancel_job(kid)
        assert batches.complete_batch(record) == BatchCounts(canceled=1)
        assert self.get(store, record).status is JobStatus.FAILED
        plain = self.enqueue(store, depends_on=None)
        assert batches.complete_batch(plain) is None
        assert self.get(store, plain).status is JobStatus.PENDING
        assert batches.complete_batch("tck-no-such-batch") is None

    @contract("batches", Level.CORE)
    def test_ready_batches_lists_what_a_crash_left(self, store: JobStore) -> None:
        """A batch whose children all ended but whose record was never completed (a crash
        between the last child's end and the completion) is listed by
        ``ready_batches``; one with an active child is not, nor a completed one.

        On failure: list WAITING records with no active child.
        """
        batches = batch_store(store)
        ready, [done] = self.batch(store, 1)
        running, _ = self.batch(store, 1)
        self.finish(store, done)
        assert batches.ready_batches(limit=10) == [ready]
        assert batches.complete_batch(ready) is not None
        assert batches.ready_batches(limit=10) == []
        assert self.get(store, running).status is JobStatus.WAITING

    @contract("batches", Level.CORE)
    def test_cancel_batch_children_takes_the_children_still_to_start(self, store: JobStore) -> None:
        """Three children, one running, one succeeded: ``cancel_batch_children`` cancels
        the one still PENDING (answers 1), leaves the running and the finished ones, the
        record and another batch's child alone; again it answers 0.

        On failure: cancel ``batch_id = ?`` children in PENDING, PAUSED or WAITING only.
        """
        batches = batch_store(store)
        record, kids = self.batch(store, 3)
        _other, [other_kid] = self.batch(store, 1)
        self.finish(store, kids[0])  # claims every due child first: all RUNNING
        assert store.release_claim(kids[2], self.get(store, kids[2]).claim_seq, message="back")
        assert store.release_claim(other_kid, self.get(store, other_kid).claim_seq, message="b")
        assert batches.cancel_batch_children(record) == 1
        assert [self.get(store, kid).status for kid in kids] == [
            JobStatus.SUCCEEDED,
            JobStatus.RUNNING,
            JobStatus.CANCELED,
        ]
        assert self.get(store, record).status is JobStatus.WAITING
        assert self.get(store, other_kid).status is JobStatus.PENDING
        assert batches.cancel_batch_children(record) == 0

    @contract("batches", Level.ADVANCED)
    def test_the_last_two_children_ending_on_two_nodes_complete_the_batch_once(
        self, stores: StoreFactory
    ) -> None:
        """Twenty batches of two children; each time both children end, then two store
        instances call ``complete_batch`` at once: exactly one gets the counts.

        On failure: guard the record's move with ``status = 'WAITING'`` (or a fenced
        transition), so the second completion changes nothing and answers ``None``.
        """
        setup = stores()
        completers = [batch_store(stores()) for _ in range(2)]
        for _ in range(_RACES):
            record, kids = self.batch(setup, 2)
            for kid in kids:
                self.finish(setup, kid)
            answers = run_concurrently(
                [partial(completer.complete_batch, record) for completer in completers]
            )
            assert raised(answers) == [], raised(answers)
            assert sorted(answers, key=lambda a: a is None) == [
                BatchCounts(succeeded=2),
                None,
            ], f"completions answered {answers}"


_RACES = 20

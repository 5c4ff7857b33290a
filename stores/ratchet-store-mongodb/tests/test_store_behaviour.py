"""Behaviour specific to the MongoDB store: races decided by unique inserts, recovery
from a writer that died between its two steps, and idempotent start-up."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    ExecutionStatus,
    JobStatus,
)
from ratchet_store_mongodb import MongoDBJobStore
from ratchet_store_mongodb._schema import COLLECTIONS, INDEXES, TOKENS
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

Opener = Callable[[], MongoDBJobStore]


def _race(count: int, action: Callable[[int], Any]) -> list[Any]:
    """Run ``action(i)`` on ``count`` threads released together; results in order."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = action(index)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return results


def test_racing_outcomes_for_one_claim_have_one_winner(fresh_store: Opener) -> None:
    """Eight nodes record outcomes for the same claim at once (complete, fail, retry,
    release, orphan reset): exactly one returns True and the job shows that outcome."""
    stores = [fresh_store() for _ in range(8)]
    job = new_job()
    stores[0].enqueue(job)
    (claimed,) = stores[0].claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)

    def outcome(index: int) -> bool:
        store, seq = stores[index], claimed.claim_seq
        kind = index % 4
        if kind == 0:
            return store.complete_job(job.id, seq, result_json="1", result_type="int")
        if kind == 1:
            return store.fail_job(job.id, seq, error="boom")
        if kind == 2:
            return store.schedule_retry(job.id, seq, error="again", delay_seconds=60)
        return store.release_claim(job.id, seq, message="drain")

    results = _race(8, outcome)
    assert results.count(True) == 1
    after = stores[0].get_job(job.id)
    assert after is not None and after.status != JobStatus.RUNNING
    (execution,) = stores[0].list_executions(job.id)
    assert execution.status.value in {"SUCCEEDED", "FAILED", "RELEASED"}


def test_racing_lock_acquirers_on_an_expired_lease_have_one_winner(fresh_store: Opener) -> None:
    """Ten nodes take over the same expired lease at once: exactly one wins."""
    stores = [fresh_store() for _ in range(10)]
    assert stores[0].try_lock("sweeper", 0.001, "old-owner")
    now = stores[0].database_time()
    while stores[0].database_time() <= now + timedelta(milliseconds=5):
        pass
    results = _race(10, lambda i: stores[i].try_lock("sweeper", 30, f"node-{i}"))
    assert results.count(True) == 1


def test_racing_cancel_and_claim_have_one_winner(fresh_store: Opener) -> None:
    """A claim and a cancel of the same PENDING job race: exactly one succeeds."""
    claimer, canceler = fresh_store(), fresh_store()
    for _ in range(5):
        job = new_job()
        claimer.enqueue(job)

        def act(index: int, job_id: str = job.id) -> bool:
            if index == 0:
                claimed = claimer.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
                return len(claimed) == 1
            return canceler.cancel_job(job_id)

        claimed, canceled = _race(2, act)
        assert claimed != canceled
        claimer.reset_for_tests()


def test_a_stalled_transition_is_rolled_forward(fresh_store: Opener) -> None:
    """A writer that inserted its transition token and died before writing the job must
    not wedge the job: past STALL_SECONDS the next writer applies the token's write."""
    store = fresh_store()
    job = new_job()
    store.enqueue(job)
    long_ago = store.database_time() - timedelta(minutes=5)
    store._tokens.insert_one(
        {
            "_id": f"job:{job.id}:0",
            "ref": f"job:{job.id}",
            "coll": "ratchet_job",
            "filter": {"_id": job.id, "rev": 0},
            "set": {"last_error": "written by the dead writer", "rev": 1},
            "at": long_ago,
        }
    )
    assert store.cancel_job(job.id)
    after = store.get_job(job.id)
    assert after is not None
    assert (after.status, after.last_error) == (JobStatus.CANCELED, "written by the dead writer")


def test_a_reservation_left_by_a_dead_enqueuer_frees_its_key(fresh_store: Opener) -> None:
    """An enqueuer that reserved a business key and died before inserting its job holds
    the key only for the pending window; then the key is free again."""
    store = fresh_store()
    store._business.insert_one(
        {
            "_id": "bk-1",
            "job_id": "never-inserted",
            "gen": 0,
            "pending": True,
            "at": store.database_time(),
        }
    )
    with pytest.raises(BusinessKeyConflictError):
        store.enqueue(new_job(business_key="bk-1"))
    store._business.update_one(
        {"_id": "bk-1"}, {"$set": {"at": store.database_time() - timedelta(minutes=5)}}
    )
    job = new_job(business_key="bk-1")
    store.enqueue(job)
    holder = store.find_active_job_by_business_key("bk-1")
    assert holder is not None and holder.id == job.id


def test_opening_twice_keeps_collections_and_indexes(mongodb_url: str) -> None:
    """Start-up creates collections and indexes idempotently (nodes start together)."""
    stores = _race(4, lambda _i: MongoDBJobStore.from_url(mongodb_url))
    try:
        database = stores[0]._db
        assert set(COLLECTIONS) <= set(database.list_collection_names())
        for name, models in INDEXES.items():
            present = set(database[name].index_information())
            assert {model.document["name"] for model in models} <= present
    finally:
        for store in stores:
            store.close()


def test_transition_tokens_do_not_pile_up(fresh_store: Opener) -> None:
    """Each transition deletes the token before last; archiving deletes the rest."""
    store = fresh_store()
    job = new_job()
    store.enqueue(job)
    for _ in range(5):
        (claimed,) = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
        store.release_claim(job.id, claimed.claim_seq, message="again")
    assert store._db[TOKENS].count_documents({"ref": f"job:{job.id}"}) <= 2
    store.cancel_job(job.id)
    store.archive_finished_jobs(older_than_seconds=-1, batch_size=10)
    assert store._db[TOKENS].count_documents({"ref": f"job:{job.id}"}) == 0


def test_a_refused_batch_leaves_no_keys_behind(fresh_store: Opener) -> None:
    """A batch refused for a used idempotency key removes the keys and reservations it
    took on the way: the same keys work in the next batch."""
    store = fresh_store()
    store.enqueue(new_job(idempotency_key="used"))
    refused = [
        new_job(idempotency_key="k1", business_key="b1"),
        new_job(idempotency_key="k2"),
        new_job(idempotency_key="used"),
    ]
    with pytest.raises(DuplicateIdempotencyKeyError):
        store.enqueue_many(refused)
    assert [store.get_job(job.id) for job in refused] == [None, None, None]
    assert store.find_job_id_by_idempotency_key("k1") is None
    retry = [new_job(idempotency_key="k1", business_key="b1"), new_job(idempotency_key="k2")]
    store.enqueue_many(retry)
    assert store.find_job_id_by_idempotency_key("k1") == retry[0].id


def test_a_claim_from_a_stale_read_loses_after_the_job_moved_on(fresh_store: Opener) -> None:
    """A claimer whose candidate read is older than two transitions of the job (whose
    token was since cleaned up) wins a token for a version the job left long ago: its
    write matches nothing and it must report the job as not claimed."""
    late, fast = fresh_store(), fresh_store()
    job = new_job()
    late.enqueue(job)
    stale = late._jobs.find_one({"_id": job.id})
    assert stale is not None
    (claimed,) = fast.claim_due_jobs(node_id="fast", limit=1, priority_boost_seconds=0)
    assert fast.release_claim(job.id, claimed.claim_seq, message="again")
    assert late._claim_one(stale, "late", late.database_time(), start=True) is None
    after = late.get_job(job.id)
    assert after is not None and (after.status, after.claim_seq) == (JobStatus.PENDING, 1)


def test_a_lock_decision_from_a_stale_read_loses(fresh_store: Opener) -> None:
    """Same for a lease: a take-over decided on an old epoch never wins."""
    store = fresh_store()
    assert store.try_lock("l", 30, "a")
    stale = store._locks.find_one({"_id": "l"})
    assert stale is not None
    store.release_lock("l", "a")
    assert store.try_lock("l", 30, "b")
    won = store._fence(
        "lock",
        "l",
        int(stale["epoch"]),
        collection=store._locks,
        version_field="epoch",
        changes={"owner": "c"},
        now=store.database_time(),
    )
    assert not won
    assert not store.try_lock("l", 30, "c")


def test_a_start_mark_racing_an_orphan_reset_decides_the_charge(fresh_store: Opener) -> None:
    """``mark_started`` and the orphan reset of the same claim are both transitions of the
    job: the charge follows whichever won. Marked (True) before the reset: the crash is
    charged (FAILED); otherwise the mark answers False and the claim goes back uncharged
    (RELEASED). Never a charge without a mark, nor a mark the reset missed."""
    marker, recoverer = fresh_store(), fresh_store()
    for _ in range(6):
        job = new_job()
        marker.enqueue(job)
        [claimed] = marker.claim_due_jobs(
            node_id="dead", limit=1, priority_boost_seconds=0, start_now=0
        )
        assert not claimed.start_recorded
        moment = marker.database_time()
        while marker.database_time() <= moment + timedelta(milliseconds=2):
            pass

        def act(index: int, claim: Any = claimed) -> Any:
            if index == 0:
                return marker.mark_started(claim.id, claim.claim_seq)
            return recoverer.recover_orphans(
                grace_seconds=0, max_crash_redeliveries=3, limit=10
            ).reset

        marked, reset = _race(2, act)
        assert reset == 1
        after = marker.get_job(job.id)
        assert after is not None and after.status == JobStatus.PENDING
        [execution] = marker.list_executions(job.id)
        if marked:
            assert (after.crash_count, execution.status, execution.message) == (
                1,
                ExecutionStatus.FAILED,
                ORPHAN_RECOVERED_MESSAGE,
            )
        else:
            assert (after.crash_count, execution.status, execution.message) == (
                0,
                ExecutionStatus.RELEASED,
                UNSTARTED_RECOVERED_MESSAGE,
            )
        marker.reset_for_tests()


def test_documents_from_before_start_marks_are_read_as_started(fresh_store: Opener) -> None:
    """A job document written before ``started_seq`` and ``redeliveries`` existed (no
    migration rewrites documents): its RUNNING claim counts as started, so a crash is
    charged as before, and its redeliveries so far are its crashes. Claimed ahead again,
    it is not started until marked."""
    store = fresh_store()
    job = new_job()
    store.enqueue(job)
    [claimed] = store.claim_due_jobs(node_id="old-node", limit=1, priority_boost_seconds=0)
    store._jobs.update_one(
        {"_id": job.id},
        {"$unset": {"started_seq": "", "redeliveries": ""}, "$set": {"crash_count": 1}},
    )
    recovery = store.recover_node_claims("old-node", max_crash_redeliveries=3, limit=10)
    assert (recovery.reset, recovery.exhausted) == (1, ())
    after = store.get_job(job.id)
    assert after is not None and after.crash_count == 2
    assert store.list_executions(job.id)[0].status is ExecutionStatus.FAILED
    [again] = store.claim_due_jobs(
        node_id="new-node", limit=1, priority_boost_seconds=0, start_now=0
    )
    assert (again.claim_seq, again.redeliveries, again.start_recorded) == (
        claimed.claim_seq + 1,
        2,
        False,
    )
    recovery = store.recover_node_claims("new-node", max_crash_redeliveries=2, limit=10)
    assert (recovery.reset, recovery.exhausted) == (1, ())  # unstarted: never exhausted
    after = store.get_job(job.id)
    assert after is not None and after.crash_count == 2
    assert store.list_executions(job.id)[1].status is ExecutionStatus.RELEASED

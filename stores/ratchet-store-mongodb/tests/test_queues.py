"""Queues on the MongoDB store, where they are MongoDB's own: job documents from before
queues existed (no ``queue`` field, never rewritten), the paused-queue collection read at
the start of every claim, and the per-candidate refusal of a paused queue's job."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from ratchet.spi import DEFAULT_QUEUE, JobStatus, QueueCounts
from ratchet_store_mongodb import MongoDBJobStore
from ratchet_store_mongodb._schema import INDEXES, JOBS, PAUSED_QUEUES
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

Opener = Callable[[], MongoDBJobStore]


def _enqueue_old_document(store: MongoDBJobStore) -> str:
    """A PENDING job as a store from before queues wrote it: no ``queue`` field."""
    job = new_job()
    store.enqueue(job)
    store._jobs.update_one({"_id": job.id}, {"$unset": {"queue": ""}})
    raw = store._jobs.find_one({"_id": job.id})
    assert raw is not None and "queue" not in raw
    return job.id


def _claim(store: MongoDBJobStore, queues: list[str] | None = None, limit: int = 10) -> list[str]:
    if queues is None:
        claimed = store.claim_due_jobs(node_id="n", limit=limit, priority_boost_seconds=0)
    else:
        claimed = store.claim_queue_jobs(
            node_id="n", queues=queues, limit=limit, priority_boost_seconds=0
        )
    return [job.id for job in claimed]


def test_a_new_job_document_stores_its_queue(store: MongoDBJobStore) -> None:
    """The queue is a field of the job document (what the claim index and the counts
    read), kept into the archive."""
    job = new_job(queue="emails")
    store.enqueue(job)
    raw = store._jobs.find_one({"_id": job.id})
    assert raw is not None and raw["queue"] == "emails"
    [claimed] = store.claim_queue_jobs(
        node_id="n", queues=["emails"], limit=1, priority_boost_seconds=0
    )
    assert claimed.queue == "emails"
    assert store.complete_job(job.id, claimed.claim_seq, result_json="1", result_type="int")
    store.archive_finished_jobs(older_than_seconds=-1, batch_size=10)
    archived = store.get_archived_job(job.id)
    assert archived is not None and archived.queue == "emails"


def test_old_documents_without_a_queue_are_in_the_default_queue(store: MongoDBJobStore) -> None:
    """Reads, counts and claims take a document without ``queue`` as "default": if this
    fails, look at ``_rows.queue_of``, ``_queues.queue_filter`` (``None`` in ``$in``
    matches a missing field) and the grouping of ``queue_counts``."""
    old_id = _enqueue_old_document(store)
    store.enqueue(new_job(queue=DEFAULT_QUEUE))
    store.enqueue(new_job(queue="other"))
    job = store.get_job(old_id)
    assert job is not None and job.queue == DEFAULT_QUEUE
    assert {j.queue for j in store.list_jobs(status=JobStatus.PENDING)} == {"default", "other"}
    assert store.queue_counts() == [
        QueueCounts(name="default", pending=2, running=0, paused=False),
        QueueCounts(name="other", pending=1, running=0, paused=False),
    ]
    assert old_id not in _claim(store, ["other"])
    claimed = store.claim_queue_jobs(
        node_id="n", queues=["default"], limit=10, priority_boost_seconds=0
    )
    assert old_id in [c.id for c in claimed] and len(claimed) == 2
    assert {c.queue for c in claimed} == {DEFAULT_QUEUE}
    assert store.queue_counts()[0] == QueueCounts(
        name="default", pending=0, running=2, paused=False
    )


def test_pausing_default_also_holds_old_documents(store: MongoDBJobStore) -> None:
    """``$nin: ["default"]`` alone would match a document without ``queue``: the filter
    must add ``None`` so that old jobs of a paused default queue stay unclaimed too."""
    old_id = _enqueue_old_document(store)
    earlier = store.database_time() - timedelta(seconds=60)
    store._jobs.update_one({"_id": old_id}, {"$set": {"scheduled_at": earlier}})
    other = new_job(queue="other")
    store.enqueue(other)
    assert store.set_queue_paused(DEFAULT_QUEUE, True)
    assert _claim(store, limit=1) == [other.id]  # the older, held job takes no place
    assert _claim(store, ["default"]) == []
    assert store.queue_counts()[0] == QueueCounts(name="default", pending=1, running=0, paused=True)
    assert store.set_queue_paused(DEFAULT_QUEUE, False)
    assert _claim(store) == [old_id]


def test_the_paused_list_is_read_by_every_claim(fresh_store: Opener) -> None:
    """A pause or resume on one node is seen by the next claim on another (nothing is
    cached per store instance)."""
    pauser, claimer = fresh_store(), fresh_store()
    job = new_job(queue="reports")
    claimer.enqueue(job)
    assert _claim(claimer, limit=0) == []  # a claim that reads nothing
    assert pauser.set_queue_paused("reports", True)
    assert _claim(claimer) == [] and _claim(claimer, ["reports"]) == []
    assert claimer.paused_queues() == ["reports"]
    assert pauser.set_queue_paused("reports", False)
    assert _claim(claimer, ["reports"]) == [job.id]


def test_a_paused_backlog_does_not_crowd_out_other_queues(store: MongoDBJobStore) -> None:
    """The paused queues are left out in the candidates' query, not after it: older jobs
    of a paused queue at the same priority must not take the claim's ``limit``."""
    earlier = store.database_time() - timedelta(seconds=60)
    held = [new_job(queue="held", scheduled_at=earlier) for _ in range(6)]
    store.enqueue_many(held)
    fresh = [new_job(queue="live") for _ in range(2)]
    store.enqueue_many(fresh)
    store.set_queue_paused("held", True)
    assert sorted(_claim(store, limit=2)) == sorted(job.id for job in fresh)


def test_a_candidate_of_a_paused_queue_is_refused_at_its_claim(store: MongoDBJobStore) -> None:
    """The fenced decision refuses a job whose queue the claim saw paused, whatever its
    candidate list held: nothing is written and the job stays PENDING."""
    job = new_job(queue="held")
    store.enqueue(job)
    doc = store._jobs.find_one({"_id": job.id})
    assert doc is not None
    now = store.database_time()
    assert store._claim_one(doc, "n", now, start=True, paused=frozenset({"held"})) is None
    after = store.get_job(job.id)
    assert after is not None and (after.status, after.claim_seq) == (JobStatus.PENDING, 0)
    won = store._claim_one(doc, "n", now, start=True, paused=frozenset({"other"}))
    assert won is not None and won.queue == "held"


def test_a_pause_is_one_document_timed_by_the_database(store: MongoDBJobStore) -> None:
    """``ratchet_paused_queue`` holds ``{_id: name, paused_at}``, ``paused_at`` from the
    server's clock; ``reset_for_tests`` empties it with the rest."""
    before = store.database_time()
    assert store.set_queue_paused("b", True) and store.set_queue_paused("a", True)
    assert not store.set_queue_paused("a", True)
    after = store.database_time()
    raw = store._db[PAUSED_QUEUES].find_one({"_id": "a"})
    assert raw is not None and before <= raw["paused_at"] <= after + timedelta(seconds=1)
    assert store.paused_queues() == ["a", "b"]
    assert store.queue_counts() == [
        QueueCounts(name="a", pending=0, running=0, paused=True),
        QueueCounts(name="b", pending=0, running=0, paused=True),
    ]
    assert store.set_queue_paused("a", False) and not store.set_queue_paused("a", False)
    store.reset_for_tests()
    assert store.paused_queues() == []


def test_a_bad_queue_name_writes_nothing(store: MongoDBJobStore) -> None:
    """The queue is checked before the keys are taken: no job, and the idempotency key
    is still free."""
    good = new_job(idempotency_key="once")
    with pytest.raises(ValueError, match="Queue name"):
        store.enqueue_many([good, new_job(queue="no spaces")])
    assert store.get_job(good.id) is None
    store.enqueue(good)
    with pytest.raises(ValueError):
        store.set_queue_paused("", True)
    with pytest.raises(ValueError):
        # One name, not a list of names (a str is a Sequence[str] to the type checker).
        store.claim_queue_jobs(node_id="n", queues="default", limit=1, priority_boost_seconds=0)


def test_the_queue_claim_index_exists(store: MongoDBJobStore) -> None:
    """``claim_queue_jobs`` reads each (queue, level) through its own index."""
    names = {model.document["name"] for model in INDEXES[JOBS]}
    assert "ratchet_job_queue_claim" in names
    assert "ratchet_job_queue_claim" in store._jobs.index_information()

"""An enqueue whose answer was lost: the first attempt's write applied (or not), its
connection died before the answer; the store's retry must recognise its own rows.

Hook: ``lose_first_enqueue``, a callable ``lose(applied)`` that makes the store's next
enqueue lose its connection on the first attempt, after the write was applied (committed,
so only the answer is lost) when ``applied`` is true, before anything was written
otherwise, and returns a list that gains one entry per attempt, the number of jobs it
wrote (or would have).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ratchet.errors import DuplicateIdempotencyKeyError
from ratchet.spi import JobStatus, JobStore, NewJob
from ratchet_tck.store._base import new_job

__all__ = [
    "LOST_ANSWER_BATCHES",
    "assert_stored_once",
    "test_a_retried_enqueue_still_reports_a_key_held_by_another_job",
    "test_an_enqueue_whose_answer_was_lost_is_stored_once",
]

LOST_ANSWER_BATCHES: dict[str, Callable[[], list[NewJob]]] = {
    "plain": lambda: [new_job()],
    "idempotency_key": lambda: [new_job(idempotency_key=f"k-{uuid.uuid4()}", tags=("a",))],
    "business_key": lambda: [new_job(business_key=f"b-{uuid.uuid4()}")],
    "batch": lambda: [new_job(idempotency_key=f"k-{uuid.uuid4()}") for _ in range(3)],
}
"""The batches whose lost answer the retry must recognise as its own, by kind of key."""


def assert_stored_once(store: JobStore, jobs: Sequence[NewJob]) -> None:
    """Exactly ``jobs`` are stored (PENDING), each with its idempotency key; the first keyed
    one really holds its key: a new enqueue with it is refused, naming that job."""
    assert store.count_jobs()[JobStatus.PENDING] == len(jobs)
    for job in jobs:
        stored = store.get_job(job.id)
        assert stored is not None and stored.idempotency_key == job.idempotency_key
    keyed = [job for job in jobs if job.idempotency_key]
    for job in keyed:
        assert job.idempotency_key is not None
        assert store.find_job_id_by_idempotency_key(job.idempotency_key) == job.id
    if keyed:
        with pytest.raises(DuplicateIdempotencyKeyError) as info:
            store.enqueue(new_job(idempotency_key=keyed[0].idempotency_key))
        assert info.value.existing_job_id == keyed[0].id


@pytest.mark.parametrize("batch", list(LOST_ANSWER_BATCHES))
def test_an_enqueue_whose_answer_was_lost_is_stored_once(
    store: JobStore,
    batch: str,
    lose_first_enqueue: Callable[[bool], list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The write commits, then the connection dies before the answer arrives. The store
    retries on a fresh connection; the retry meets its own rows (same job ids) and succeeds:
    no false DuplicateIdempotencyKeyError or BusinessKeyConflictError, no second row.

    On failure: a retried enqueue whose key conflict comes from the very job ids it carries
    must count as stored."""
    jobs = LOST_ANSWER_BATCHES[batch]()
    attempts = lose_first_enqueue(True)
    store.enqueue_many(jobs)
    assert attempts == [len(jobs), len(jobs)], "the first attempt did not lose its answer"
    monkeypatch.undo()
    assert_stored_once(store, jobs)


def test_a_retried_enqueue_still_reports_a_key_held_by_another_job(
    store: JobStore, lose_first_enqueue: Callable[[bool], list[Any]]
) -> None:
    """The connection dies before anything was written; the retry then meets a key held by
    another job: that is a real conflict and must be raised, naming the holder."""
    holder = new_job(idempotency_key="taken")
    store.enqueue(holder)
    attempts = lose_first_enqueue(False)
    late = new_job(idempotency_key="taken")
    with pytest.raises(DuplicateIdempotencyKeyError) as info:
        store.enqueue(late)
    assert len(attempts) == 2, "the enqueue was not retried"
    assert info.value.existing_job_id == holder.id
    assert store.get_job(late.id) is None

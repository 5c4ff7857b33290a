"""CORE: a rejected enqueue, single or bulk, leaves nothing behind.

``enqueue_many`` is all-or-nothing for every kind of conflict (an idempotency key used
before or twice in the batch, a business key held by an active job or twice in the
batch), wherever in the batch the conflicting job sits, also past any chunk size the
store splits batches into. A rejected single enqueue reserves no key and stores no row.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet.spi import JobStatus, JobStore, NewJob
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase, new_job

BATCH = 1200  # past the 500- or 1,000-row chunks stores commonly split inserts into

CONFLICTS: dict[str, type[RatchetError]] = {
    "idempotency key used before": DuplicateIdempotencyKeyError,
    "idempotency key twice in the batch": DuplicateIdempotencyKeyError,
    "business key held by a stored job": BusinessKeyConflictError,
    "business key twice in the batch": BusinessKeyConflictError,
}
POSITIONS = {"first job": 0, "last job": BATCH - 1}


def batch_of(size: int) -> list[NewJob]:
    return [
        new_job(idempotency_key=f"batch-{n}", business_key=f"batch-{n}", tags=("batch",))
        for n in range(size)
    ]


def with_conflict(batch: list[NewJob], conflict: str, index: int) -> list[NewJob]:
    """``batch`` with the job at ``index`` made to conflict as ``conflict`` says (an in-batch
    duplicate repeats the key of the job at the other end of the batch)."""
    partner = batch[-1] if index == 0 else batch[0]
    key = {
        "idempotency key used before": {"idempotency_key": "stored"},
        "idempotency key twice in the batch": {"idempotency_key": partner.idempotency_key},
        "business key held by a stored job": {"business_key": "stored"},
        "business key twice in the batch": {"business_key": partner.business_key},
    }[conflict]
    return [*batch[:index], replace(batch[index], **key), *batch[index + 1 :]]  # type: ignore[arg-type]


class AtomicityContracts(StoreSuiteBase):
    @pytest.mark.parametrize("position", sorted(POSITIONS))
    @pytest.mark.parametrize("conflict", sorted(CONFLICTS))
    @contract("bulk", Level.CORE)
    def test_enqueue_many_is_all_or_nothing_for_every_conflict(
        self, store: JobStore, conflict: str, position: str
    ) -> None:
        """A batch of 1,200 jobs with one conflicting job (first or last; the key used
        before, held by a stored job, or repeated in the batch) raises the conflict's error
        and stores nothing: no job, no tag, no key. The same batch without that job then
        goes in whole.

        On failure: the batch is committed in chunks, checks keys only against stored rows
        (not within the batch), or drops duplicates silently; run the whole batch in one
        transaction and let every conflict roll it back.
        """
        self.enqueue(store, idempotency_key="stored", business_key="stored")
        index = POSITIONS[position]
        clean = batch_of(BATCH)
        with pytest.raises(CONFLICTS[conflict]):
            store.enqueue_many(with_conflict(clean, conflict, index))
        assert store.count_jobs()[JobStatus.PENDING] == 1, "part of the rejected batch was stored"
        assert store.list_jobs(tag="batch", limit=5) == [], "tags of the rejected batch remain"
        for job in (clean[0], clean[BATCH // 2], clean[-1]):
            assert store.find_job_id_by_idempotency_key(f"{job.idempotency_key}") is None, (
                f"the rejected batch reserved idempotency key {job.idempotency_key!r}"
            )
        store.enqueue_many([*clean[:index], *clean[index + 1 :]])
        assert store.count_jobs()[JobStatus.PENDING] == BATCH

    @pytest.mark.parametrize("conflict", ["idempotency key", "business key"])
    @contract("bulk", Level.CORE)
    def test_a_rejected_enqueue_leaves_nothing_behind(self, store: JobStore, conflict: str) -> None:
        """A single enqueue rejected for its idempotency key or its business key leaves no
        row, no tag and no reservation of its other key: both keys can be used at once by
        a new job.

        On failure: a key is reserved (or the row inserted) in its own transaction before
        the conflict is detected, and not removed when the enqueue fails.
        """
        holder = self.enqueue(store, idempotency_key="held", business_key="held")
        keys = (
            {"idempotency_key": "held", "business_key": "fresh"}
            if conflict == "idempotency key"
            else {"idempotency_key": "fresh", "business_key": "held"}
        )
        rejected = new_job(tags=("rejected",), **keys)
        with pytest.raises((DuplicateIdempotencyKeyError, BusinessKeyConflictError)):
            store.enqueue(rejected)
        assert store.get_job(rejected.id) is None
        assert store.list_jobs(tag="rejected") == []
        assert store.find_job_id_by_idempotency_key("fresh") is None, "key 'fresh' was reserved"
        assert store.find_job_id_by_idempotency_key("held") == holder
        assert store.find_active_job_by_business_key("fresh") is None
        self.enqueue(store, idempotency_key="fresh", business_key="fresh")
        assert store.count_jobs()[JobStatus.PENDING] == 2

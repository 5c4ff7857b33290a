"""Transactional enqueue (``SupportsTransactionalEnqueue``): a job written through the
application's own connection lives or dies with the application's transaction.

N/A for stores without the capability, and for harnesses that supply no
:meth:`~ratchet_tck.store.harness.StoreHarness.transaction_factories`. Each contract runs
once per kind of application transaction the harness names (a driver connection, an
SQLAlchemy Connection or Session), and says which kind failed.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import JobStatus, JobStore, SupportsTransactionalEnqueue
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase, new_job
from ratchet_tck.store.harness import StoreHarness, TransactionFactory

CONTRACT = "transactional enqueue"


def transactional_store(store: JobStore) -> SupportsTransactionalEnqueue:
    if not isinstance(store, SupportsTransactionalEnqueue):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsTransactionalEnqueue")
    return store


def transaction_kinds(harness: StoreHarness) -> Mapping[str, TransactionFactory]:
    kinds = harness.transaction_factories()
    if not kinds:
        pytest.skip(f"{NA_PREFIX} the store harness supplies no transaction_factories()")
    return kinds


def claimable(store: JobStore) -> list[str]:
    """Ids a worker on the store's own connections can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="tck-worker", limit=100, priority_boost_seconds=0)
    return sorted(job.id for job in claimed)


class TransactionalEnqueueContracts(StoreSuiteBase):
    @pytest.fixture
    def in_transaction(
        self, store: JobStore, harness: StoreHarness
    ) -> tuple[SupportsTransactionalEnqueue, Mapping[str, TransactionFactory]]:
        """The store as ``SupportsTransactionalEnqueue`` and the harness's transaction kinds
        (N/A without either). The kinds share one store: each uses its own keys."""
        return transactional_store(store), transaction_kinds(harness)

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_a_job_enqueued_in_a_transaction_appears_only_at_commit(
        self,
        store: JobStore,
        in_transaction: tuple[SupportsTransactionalEnqueue, Mapping[str, TransactionFactory]],
    ) -> None:
        """Inside the application's open transaction the job is invisible to the store's
        other connections (``get_job``, ``count_jobs``, a worker's claim); after the
        application commits it is claimable, with its tags.

        On failure before the commit: ``enqueue_in`` wrote through a connection of its own
        (or committed the caller's transaction); it must run its statements on the
        caller's connection and never call ``commit()``. On failure after the commit: the
        rows were written somewhere the caller's commit does not reach."""
        transactional, kinds = in_transaction
        for kind, open_transaction in kinds.items():
            job = new_job(tags=("outbox",))
            with open_transaction() as conn:
                transactional.enqueue_in(conn, job)
                assert store.get_job(job.id) is None, f"{kind}: visible before the commit"
                assert store.count_jobs()[JobStatus.PENDING] == 0, f"{kind}: counted early"
                assert claimable(store) == [], f"{kind}: a worker claimed it before the commit"
                conn.commit()
            assert claimable(store) == [job.id], f"{kind}: not claimable after the commit"
            assert self.get(store, job.id).tags == ("outbox",), f"{kind}: tags lost"

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_a_rolled_back_transaction_leaves_no_job(
        self,
        store: JobStore,
        in_transaction: tuple[SupportsTransactionalEnqueue, Mapping[str, TransactionFactory]],
    ) -> None:
        """``enqueue_many_in`` of a keyed, tagged job and another, then the application
        rolls back: no job, no PENDING count, no idempotency key and no business key are
        left; both keys can be used again at once.

        On failure: something was written outside the caller's transaction (the key
        reservation in a separate step, a commit on the store's own connection)."""
        transactional, kinds = in_transaction
        for kind, open_transaction in kinds.items():
            key = f"order-7-{kind}"
            job = new_job(idempotency_key=key, business_key=key, tags=("t",))
            pending = store.count_jobs()[JobStatus.PENDING]
            with open_transaction() as conn:
                transactional.enqueue_many_in(conn, [job, new_job()])
                conn.rollback()
            assert store.get_job(job.id) is None, f"{kind}: the job survived the rollback"
            assert store.count_jobs()[JobStatus.PENDING] == pending, f"{kind}: a job survived"
            assert store.find_job_id_by_idempotency_key(key) is None, f"{kind}: key kept"
            assert store.find_active_job_by_business_key(key) is None, f"{kind}: key held"
            store.enqueue(new_job(idempotency_key=key, business_key=key))

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_a_conflict_leaves_the_callers_transaction_usable(
        self,
        store: JobStore,
        in_transaction: tuple[SupportsTransactionalEnqueue, Mapping[str, TransactionFactory]],
    ) -> None:
        """With a committed holder of a business key and an idempotency key: inside one
        application transaction a job is enqueued, then a job with the held business key
        raises BusinessKeyConflictError and a batch ending with the held idempotency key
        raises DuplicateIdempotencyKeyError, each naming the holder; a last job is
        enqueued and the application commits. The first and last jobs are stored; nothing
        of the refused batch is.

        On failure: a conflict must roll back only the store's own statements (to a
        savepoint), not the caller's transaction; and the holder is looked up where the
        caller's transaction can see it."""
        transactional, kinds = in_transaction
        for kind, open_transaction in kinds.items():
            holder = new_job(business_key=f"invoice-{kind}", idempotency_key=f"req-{kind}")
            store.enqueue(holder)
            first, last, refused = new_job(), new_job(), new_job()
            with open_transaction() as conn:
                transactional.enqueue_in(conn, first)
                with pytest.raises(BusinessKeyConflictError) as info:
                    transactional.enqueue_in(conn, new_job(business_key=holder.business_key))
                assert info.value.existing_job_id == holder.id, f"{kind}: wrong holder"
                with pytest.raises(DuplicateIdempotencyKeyError) as duplicate:
                    transactional.enqueue_many_in(
                        conn, [refused, new_job(idempotency_key=holder.idempotency_key)]
                    )
                assert duplicate.value.existing_job_id == holder.id, f"{kind}: wrong holder"
                transactional.enqueue_in(conn, last)
                conn.commit()
            for job in (first, last):
                assert store.get_job(job.id) is not None, f"{kind}: lost with the conflict"
            assert store.get_job(refused.id) is None, f"{kind}: half a refused batch stored"
            assert sorted(claimable(store)) == sorted([holder.id, first.id, last.id]), kind

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_a_key_held_earlier_in_the_same_transaction_is_a_conflict(
        self,
        in_transaction: tuple[SupportsTransactionalEnqueue, Mapping[str, TransactionFactory]],
    ) -> None:
        """The holder of a business key (or an idempotency key) can be a job the caller
        enqueued earlier in the same, uncommitted transaction: the second job is refused
        and the error names the first.

        On failure with the wrong (or no) holder named: the holder is looked up on one of
        the store's own connections, which cannot see the caller's uncommitted rows; look
        it up on the caller's connection."""
        transactional, kinds = in_transaction
        for kind, open_transaction in kinds.items():
            mine = new_job(business_key=f"k-{kind}", idempotency_key=f"i-{kind}")
            with open_transaction() as conn:
                transactional.enqueue_in(conn, mine)
                with pytest.raises(BusinessKeyConflictError) as info:
                    transactional.enqueue_in(conn, new_job(business_key=mine.business_key))
                assert info.value.existing_job_id == mine.id, f"{kind}: wrong holder"
                with pytest.raises(DuplicateIdempotencyKeyError) as duplicate:
                    transactional.enqueue_in(conn, new_job(idempotency_key=mine.idempotency_key))
                assert duplicate.value.existing_job_id == mine.id, f"{kind}: wrong holder"
                conn.rollback()

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_the_application_api_joins_the_transaction(
        self,
        store: JobStore,
        in_transaction: tuple[SupportsTransactionalEnqueue, Mapping[str, TransactionFactory]],
    ) -> None:
        """``Ratchet.enqueue_in``, ``builder(...).submit_in`` and ``enqueue_many_in`` run
        the application's own checks (JSON arguments) and write through the caller's
        transaction: nothing is visible before the commit, the jobs after it, and a
        rolled-back batch leaves nothing.

        On failure: the façade is fine if the store contracts above pass; look at how the
        store handles the connection object the façade passes on unchanged."""
        from ratchet import ArgumentsNotSerializableError, Ratchet

        _transactional, kinds = in_transaction
        app = Ratchet(store, coordinator="none")

        @app.job(name="tck.ship")
        def ship(order: int) -> None: ...

        for kind, open_transaction in kinds.items():
            with open_transaction() as conn:
                kept = app.enqueue_in(conn, ship, 1)
                keyed = app.builder(ship, 2).business_key(f"order-2-{kind}").submit_in(conn)
                with pytest.raises(ArgumentsNotSerializableError):
                    app.enqueue_in(conn, ship, object())
                assert app.get_job(kept) is None, f"{kind}: visible before the commit"
                conn.commit()
            stored, keyed_job = app.get_job(kept), app.get_job(keyed)
            assert stored is not None and stored.args == (1,), f"{kind}: {stored!r}"
            assert keyed_job is not None and keyed_job.business_key == f"order-2-{kind}"
            with open_transaction() as conn:
                gone = app.enqueue_many_in(conn, ship, [(3,), (4,)])
                conn.rollback()
            assert all(app.get_job(job_id) is None for job_id in gone), kind

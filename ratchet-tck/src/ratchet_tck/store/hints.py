"""Wakeup hints sent inside enqueues (``SupportsEnqueueHints``): one hint per insert, with
the highest priority inserted, delivered when the jobs become visible and never for an
insert that failed.

N/A for stores without the capability, and for harnesses that supply no
:meth:`~ratchet_tck.store.harness.StoreHarness.hint_listener`. The hint of a transactional
enqueue is part of the ``transactional enqueue`` contract and needs that capability and
the harness's ``transaction_factories()`` too.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator

import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import JobStore, SupportsEnqueueHints, new_job_id
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase, new_job
from ratchet_tck.store.harness import StoreHarness, hook_or_na
from ratchet_tck.store.transactional import transaction_kinds, transactional_store

CONTRACT = "enqueue hints"

Received = Callable[..., list[int]]


def hinting_store(store: JobStore) -> SupportsEnqueueHints:
    if not isinstance(store, SupportsEnqueueHints):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsEnqueueHints")
    return store


def envelope(priority: int) -> str:
    return json.dumps({"priority": priority})


class EnqueueHintContracts(StoreSuiteBase):
    @pytest.fixture
    def hints(self, store: JobStore, harness: StoreHarness) -> Iterator[Received]:
        """Asks ``store`` to hint on a fresh channel and listens there; yields
        ``received(wait=0.5)``: the priorities of the hints that arrived meanwhile."""
        hinting = hinting_store(store)
        channel = f"ratchet_tck_{uuid.uuid4().hex[:16]}"
        with hook_or_na(harness, "hint_listener", channel) as listen:
            hinting.send_hints_with_enqueue(channel, envelope)

            def received(wait: float = 0.5) -> list[int]:
                return [int(json.loads(payload)["priority"]) for payload in listen(wait)]

            yield received

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_no_hints_until_asked(self, store: JobStore, harness: StoreHarness) -> None:
        """A store that was never given a channel sends nothing on it when jobs are
        enqueued.

        On failure: hints must start with ``send_hints_with_enqueue`` and go only to the
        channel it named."""
        hinting_store(store)
        channel = f"ratchet_tck_{uuid.uuid4().hex[:16]}"
        with hook_or_na(harness, "hint_listener", channel) as listen:
            store.enqueue(new_job())
            store.enqueue_many([new_job(), new_job()])
            assert listen(0.5) == []

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_each_enqueue_sends_one_hint_with_the_highest_priority(
        self, store: JobStore, hints: Received
    ) -> None:
        """One hint per call, whatever the shape of the insert: a plain job (priority 3), a
        job with tags and an idempotency key (the default priority, 2), a batch of three
        (the highest, 4) and a batch of 2,500 (past any internal chunk size: still one
        hint).

        On failure with several hints: the hint is sent per chunk or per row instead of
        once per enqueue call; with a wrong priority: use the highest of the batch."""
        store.enqueue(new_job(priority=3))
        assert hints() == [3]
        store.enqueue(new_job(tags=("a",), idempotency_key=new_job_id()))
        assert hints() == [2]
        store.enqueue_many([new_job(priority=1), new_job(priority=4), new_job()])
        assert hints() == [4]
        store.enqueue_many([new_job() for _ in range(2500)])
        assert hints() == [2]

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_a_failed_insert_sends_nothing(self, store: JobStore, hints: Received) -> None:
        """An enqueue refused for a business key conflict, alone or at the end of a batch,
        sends no hint.

        On failure: the hint must be part of the insert's transaction (or sent after it
        committed), never before the insert is known to succeed."""
        store.enqueue(new_job(business_key="held"))
        hints()
        with pytest.raises(BusinessKeyConflictError):
            store.enqueue(new_job(business_key="held"))
        with pytest.raises(BusinessKeyConflictError):
            store.enqueue_many([new_job(), new_job(business_key="held")])
        assert hints() == []

    @contract("transactional enqueue", Level.BEHAVIORAL)
    def test_hints_of_a_transactional_enqueue_are_sent_only_at_commit(
        self, store: JobStore, harness: StoreHarness, hints: Received
    ) -> None:
        """A job enqueued in the application's transaction sends no hint while the
        transaction is open, one when the application commits, and none at all when it
        rolls back.

        On failure before the commit: the hint went out on another connection (or was
        sent by the store directly) instead of inside the caller's transaction, so a
        worker wakes for a job it cannot see yet, or one that never comes."""
        transactional = transactional_store(store)
        for kind, open_transaction in transaction_kinds(harness).items():
            with open_transaction() as conn:
                transactional.enqueue_in(conn, new_job(priority=3))
                assert hints(0.3) == [], f"{kind}: hinted before the commit"
                conn.commit()
            assert hints() == [3], f"{kind}: no hint (or several) at the commit"
            with open_transaction() as conn:
                transactional.enqueue_in(conn, new_job())
                conn.rollback()
            assert hints(0.3) == [], f"{kind}: hinted for a rolled-back job"

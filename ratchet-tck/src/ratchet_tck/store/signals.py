"""Signals (``SupportsSignals``): a job enqueued with ``signal_key`` waits (WAITING, never
claimed) until a signal is delivered to it; a delivery releases it once, with its payload;
an expired wait is charged as a failed attempt and waits again or fails; and a delivery
racing an expiry (or another delivery) applies once.

N/A for stores without the capability: there a job awaiting a signal is refused.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import (
    JobStatus,
    JobStore,
    StoredPayload,
    SupportsChains,
    SupportsJobPause,
    SupportsPayloadRewrite,
    SupportsSignals,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    new_job,
    raised,
    run_concurrently,
)
from ratchet_tck.store.times import PRECISION, off_window


def signal_store(store: JobStore) -> SupportsSignals:
    if not isinstance(store, SupportsSignals):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsSignals")
    return store


class SignalContracts(StoreSuiteBase):
    def awaiting(
        self, store: JobStore, key: str = "tck-signal", timeout: float | None = 3600.0, **more: Any
    ) -> str:
        """Enqueue a job awaiting ``key`` for ``timeout`` seconds (as the application
        does: the timeout is also the delay, so ``scheduled_at`` is the deadline)."""
        signal_store(store)
        job = new_job(
            signal_key=key,
            signal_timeout_seconds=timeout,
            delay_seconds=timeout or 0.0,
            **more,
        )
        store.enqueue(job)
        return job.id

    def expired(self, store: JobStore, key: str = "tck-signal", **more: Any) -> str:
        """A job whose wait for ``key`` (0.05 s) is over once this returns (with a margin:
        a database clock may read in whole milliseconds)."""
        job_id = self.awaiting(store, key, timeout=0.05, **more)
        self.sleep_past(0.1)
        return job_id

    @contract("signals", Level.CORE)
    def test_a_job_awaiting_a_signal_waits_unclaimed_with_its_key_and_deadline(
        self, store: JobStore
    ) -> None:
        """A job enqueued with a signal key and a one-hour timeout reads back WAITING with
        the key and timeout, ``scheduled_at`` one hour after its insert, no payload; claims
        never take it; ``signal_waiters`` lists it under its key only, oldest first.

        On failure: insert a job with ``signal_key`` as WAITING, keep ``signal_key`` and
        ``signal_timeout_seconds``, and compute ``scheduled_at`` from ``delay_seconds`` as
        for any job.
        """
        signals = signal_store(store)
        before = store.database_time()
        first = self.awaiting(store)
        after = store.database_time()
        second = self.awaiting(store)
        self.awaiting(store, key="tck-other-signal")
        job = self.get(store, first)
        assert job.status is JobStatus.WAITING
        assert (job.signal_key, job.signal_timeout_seconds) == ("tck-signal", 3600.0)
        assert (job.signal, job.signal_delivered_at, job.depends_on) == (None, None, None)
        hour = timedelta(hours=1)
        assert not off_window(job.scheduled_at, before + hour, after + hour, PRECISION), (
            f"deadline {job.scheduled_at}, enqueued in [{before}, {after}] with a 1 h timeout"
        )
        assert self.claim_all(store) == [], "a job awaiting a signal was claimed"
        assert [j.id for j in signals.signal_waiters("tck-signal", limit=10)] == [first, second]
        assert [j.id for j in signals.signal_waiters("tck-signal", limit=1)] == [first]
        assert signals.signal_waiters("tck-nobody", limit=10) == []

    @contract("signals", Level.CORE)
    def test_a_delivery_releases_the_job_once_with_its_payload(self, store: JobStore) -> None:
        """``deliver_signal`` makes the job PENDING, due at the database time of the
        delivery, with the decoded payload and the delivery time, and claimable; a second
        delivery answers ``False`` and keeps the first payload; the job leaves the
        waiters of its key.

        On failure: guard the delivery with ``status = 'WAITING'`` and a signal key, and
        set ``scheduled_at``, ``signal_json`` and ``signal_delivered_at`` in the same write.
        """
        signals = signal_store(store)
        job_id = self.awaiting(store)
        before = store.database_time()
        assert signals.deliver_signal(job_id, '{"decision": "approved"}') is True
        after = store.database_time()
        job = self.get(store, job_id)
        assert job.status is JobStatus.PENDING
        assert job.signal == {"decision": "approved"}
        assert job.signal_delivered_at is not None
        for moment in (job.scheduled_at, job.signal_delivered_at):
            assert not off_window(moment, before, after, PRECISION), (
                f"{moment} is not the delivery's time, in [{before}, {after}]"
            )
        assert signals.deliver_signal(job_id, '"again"') is False, "delivered twice"
        assert self.get(store, job_id).signal == {"decision": "approved"}
        assert signals.signal_waiters("tck-signal", limit=10) == []
        [claimed] = self.claim_all(store)
        assert claimed.id == job_id

    @contract("signals", Level.CORE)
    def test_a_delivery_to_a_job_awaiting_no_signal_changes_nothing(self, store: JobStore) -> None:
        """Deliveries to a missing job, a plain PENDING job, a WAITING chain step and a
        canceled signal waiter answer ``False`` and change nothing.

        On failure: the delivery's guard must require WAITING *and* a signal key.
        """
        signals = signal_store(store)
        plain = self.enqueue(store)
        step = None
        if isinstance(store, SupportsChains):
            first = new_job()
            step = new_job(depends_on=first.id)
            store.enqueue_many([first, step])
        canceled = self.awaiting(store)
        assert store.cancel_job(canceled) is True, "cancel_job must take a signal waiter"
        assert signals.deliver_signal("tck-no-such-job", "1") is False
        assert signals.deliver_signal(plain, "1") is False
        assert self.get(store, plain).signal is None
        if step is not None:
            assert signals.deliver_signal(step.id, "1") is False
            assert self.get(store, step.id).status is JobStatus.WAITING
        assert signals.deliver_signal(canceled, "1") is False
        assert self.get(store, canceled).status is JobStatus.CANCELED

    @contract("signals", Level.CORE)
    def test_a_signal_waiter_holds_its_business_key_and_resists_pause(
        self, store: JobStore
    ) -> None:
        """A job awaiting a signal with a business key: another job with the key is
        refused; pausing it answers ``False``; orphan recovery leaves it WAITING;
        ``cancel_job`` cancels it and frees the key.

        On failure: a WAITING job must count as active wherever a business key is checked,
        and only PENDING jobs pause.
        """
        signal_store(store)
        job_id = self.awaiting(store, business_key="tck-signal-key")
        with pytest.raises(BusinessKeyConflictError):
            self.enqueue(store, business_key="tck-signal-key")
        if isinstance(store, SupportsJobPause):
            assert store.pause_job(job_id) is False
        store.recover_orphans(grace_seconds=0.0, max_crash_redeliveries=3, limit=100)
        assert self.get(store, job_id).status is JobStatus.WAITING
        assert store.cancel_job(job_id) is True
        self.enqueue(store, business_key="tck-signal-key")

    @contract("signals", Level.CORE)
    def test_expired_waits_are_read_earliest_deadline_first_and_only_when_due(
        self, store: JobStore
    ) -> None:
        """``expired_signal_waits`` lists the waits whose deadline passed, earliest first,
        at most ``limit``; not one due in an hour, one with no timeout, or one delivered;
        reading it changes nothing.

        On failure: select WAITING jobs with a signal key and a timeout whose
        ``scheduled_at`` is at or before the database's now, ordered by it.
        """
        signals = signal_store(store)
        first = self.expired(store)
        second = self.expired(store)
        delivered = self.expired(store)
        assert signals.deliver_signal(delivered, "null")
        self.awaiting(store)  # due in an hour
        self.awaiting(store, timeout=None)  # waits for ever
        assert [j.id for j in signals.expired_signal_waits(limit=10)] == [first, second]
        assert [j.id for j in signals.expired_signal_waits(limit=1)] == [first]
        assert signals.expired_signal_waits(limit=0) == []
        assert self.get(store, first).status is JobStatus.WAITING
        assert self.get(store, first).attempts == 0

    @contract("signals", Level.CORE)
    def test_an_expired_wait_is_charged_then_waits_again_or_fails(self, store: JobStore) -> None:
        """``expire_signal_wait`` with a re-arm: one attempt more, ``last_error`` set,
        still WAITING with the new deadline (so no longer expired); the same call again
        (its ``attempts`` now stale) answers ``False``. Without a re-arm: FAILED with
        ``finished_at``, and a delivery then answers ``False``.

        On failure: guard the expiry by WAITING, a signal key, a passed deadline and
        ``attempts`` equal to the value read; set the new deadline from the database's
        now, or FAILED and ``finished_at``.
        """
        signals = signal_store(store)
        rearmed = self.expired(store)
        before = store.database_time()
        assert signals.expire_signal_wait(rearmed, attempts=0, error="late", rearm_seconds=600)
        after = store.database_time()
        job = self.get(store, rearmed)
        assert (job.status, job.attempts, job.last_error) == (JobStatus.WAITING, 1, "late")
        ten = timedelta(minutes=10)
        assert not off_window(job.scheduled_at, before + ten, after + ten, PRECISION), (
            f"re-armed deadline {job.scheduled_at}, expired in [{before}, {after}] + 600 s"
        )
        assert signals.expired_signal_waits(limit=10) == []
        assert not signals.expire_signal_wait(rearmed, attempts=1, error="x", rearm_seconds=1), (
            "expired a wait whose deadline is ten minutes away"
        )
        again = self.expired(store)  # re-armed with no time: at once expired again
        assert signals.expire_signal_wait(again, attempts=0, error="late", rearm_seconds=0)
        assert not signals.expire_signal_wait(again, attempts=0, error="x", rearm_seconds=0), (
            "expired a wait with a stale attempts value (charged twice for one deadline)"
        )
        assert self.get(store, again).attempts == 1
        failed = self.expired(store)
        assert signals.expire_signal_wait(failed, attempts=0, error="late", rearm_seconds=None)
        job = self.get(store, failed)
        assert (job.status, job.attempts, job.last_error) == (JobStatus.FAILED, 1, "late")
        assert job.finished_at is not None
        assert signals.deliver_signal(failed, "1") is False

    @contract("signals", Level.ADVANCED)
    def test_a_delivery_and_an_expiry_racing_for_a_job_apply_once(
        self, stores: StoreFactory
    ) -> None:
        """Twenty expired waits, each raced by a delivery and a final expiry from two
        store instances at once: exactly one of the two answers ``True`` for each job,
        and the job is PENDING with the payload when the delivery won, FAILED without it
        when the expiry did.

        On failure: the delivery and the expiry must each be one guarded write (or a
        transition fenced by a version), never a read followed by an unconditional write.
        """
        setup = stores()
        deliverer = signal_store(stores())
        expirer = signal_store(stores())
        for _ in range(_RACES):
            job_id = self.expired(setup)
            answers = run_concurrently(
                [
                    partial(deliverer.deliver_signal, job_id, '"won"'),
                    partial(
                        expirer.expire_signal_wait,
                        job_id,
                        attempts=0,
                        error="late",
                        rearm_seconds=None,
                    ),
                ]
            )
            assert raised(answers) == [], raised(answers)
            delivered, expired = answers
            assert delivered != expired, f"delivery {delivered}, expiry {expired} for {job_id}"
            job = self.get(setup, job_id)
            if delivered:
                assert (job.status, job.signal) == (JobStatus.PENDING, "won")
            else:
                assert (job.status, job.signal) == (JobStatus.FAILED, None)

    @contract("signals", Level.ADVANCED)
    def test_concurrent_deliveries_to_one_job_release_it_once(self, stores: StoreFactory) -> None:
        """Four store instances deliver to the same job at once, twenty times over: one
        ``True`` per job, and its payload is the winner's.

        On failure: the delivery must be one guarded write (``status = 'WAITING'`` in its
        WHERE), not a read and a write.
        """
        setup = stores()
        deliverers = [signal_store(stores()) for _ in range(4)]
        for _ in range(_RACES):
            job_id = self.awaiting(setup)
            answers = run_concurrently(
                [
                    partial(deliverer.deliver_signal, job_id, str(index))
                    for index, deliverer in enumerate(deliverers)
                ]
            )
            assert raised(answers) == [], raised(answers)
            assert answers.count(True) == 1, f"deliveries answered {answers}"
            assert self.get(setup, job_id).signal == answers.index(True)

    @contract("signals", Level.CORE)
    def test_a_delivered_payload_is_rotated_with_the_others(self, store: JobStore) -> None:
        """With ``SupportsPayloadRewrite`` (key rotation): the scan reads a delivered
        signal's payload as raw text (``signal_json``; ``None`` for a job without one),
        in the live table and, once the job finished, in the archive, and a rewrite that
        passes ``signal_json`` replaces it there.

        On failure: select ``signal_json`` in both scans and set it in both rewrites.
        """
        signals = signal_store(store)
        if not isinstance(store, SupportsPayloadRewrite):
            pytest.skip(f"{NA_PREFIX} the store does not offer SupportsPayloadRewrite")
        plain = self.enqueue(store)
        job_id = self.awaiting(store)
        assert signals.deliver_signal(job_id, '{"k" : "é"}')
        scanned = self._scanned(store, archived=False)
        assert scanned[plain].signal_json is None
        assert scanned[job_id].signal_json == '{"k" : "é"}', scanned[job_id]
        assert self._rewrite(store, scanned[job_id], _SEALED)
        assert self.get(store, job_id).signal == {"ratchet:encrypted": "tök€n"}
        [claimed] = [job for job in self.claim_all(store) if job.id == job_id]
        assert store.complete_job(job_id, claimed.claim_seq, result_json=None, result_type=None)
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) >= 1
        archived = self._scanned(store, archived=True)[job_id]
        assert archived.signal_json == _SEALED, archived
        assert self._rewrite(store, archived, '"again"')
        assert self._scanned(store, archived=True)[job_id].signal_json == '"again"'

    @staticmethod
    def _scanned(store: SupportsPayloadRewrite, *, archived: bool) -> dict[str, StoredPayload]:
        batch = store.scan_payloads(archived=archived, after_id=None, limit=100)
        return {payload.job_id: payload for payload in batch}

    @staticmethod
    def _rewrite(store: SupportsPayloadRewrite, stored: StoredPayload, signal_json: str) -> bool:
        return store.rewrite_payload(
            stored,
            args_json=stored.args_json,
            kwargs_json=stored.kwargs_json,
            params=stored.params,
            result_json=stored.result_json,
            signal_json=signal_json,
        )


_RACES = 20
_SEALED = '{"ratchet:encrypted":"tök€n"}'

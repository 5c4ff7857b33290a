"""Queue ages (``SupportsPendingAges``): how long each priority's oldest due job has waited.

N/A for stores without the capability: metrics then leave
``ratchet_oldest_pending_age_seconds`` out.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from ratchet.spi import JobStatus, JobStore, SupportsPendingAges
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase
from ratchet_tck.store.times import SKEWS, process_clock_shifted

# Stored times may lose what lies below a microsecond (SQLite keeps epoch seconds as REAL).
_SLACK = 0.01


def ages_store(store: JobStore) -> SupportsPendingAges:
    if not isinstance(store, SupportsPendingAges):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsPendingAges")
    return store


class PendingAgeContracts(StoreSuiteBase):
    def _mixed_queue(self, store: JobStore) -> None:
        """Due PENDING jobs at two priorities (two at one of them), and jobs that must not
        count: one due in an hour, one RUNNING, one dead-lettered, one succeeded."""
        # Claimed first: running() claims the most urgent due job, which must be its own.
        self.running(store, priority=4)  # an hour overdue when it was claimed
        failed = self.running(store, priority=0)
        assert store.fail_job(failed.id, failed.claim_seq, error="x")
        done = self.running(store, priority=0)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        now = store.database_time()
        for priority, seconds_ago in ((1, 100), (1, 40), (3, 10)):
            self.enqueue(
                store, priority=priority, scheduled_at=now - timedelta(seconds=seconds_ago)
            )
        self.enqueue(store, priority=2, scheduled_at=now + timedelta(hours=1))

    @contract("queue ages", Level.CORE)
    def test_oldest_pending_age_is_per_priority_and_counts_only_due_pending_jobs(
        self, store: JobStore
    ) -> None:
        """An idle queue has no ages. With due PENDING jobs 100 s and 40 s overdue at one
        priority and 10 s at another, the ages are about 100 s and 10 s (the oldest of
        each priority, measured on the database clock); a job due in an hour and
        RUNNING, FAILED and SUCCEEDED jobs, however old, add no priority.

        On failure: filter on ``status = 'PENDING' AND scheduled_at <= now``, take the
        smallest ``scheduled_at`` per priority, and subtract it from the database's now.
        """
        ages = ages_store(store)
        assert ages.oldest_pending_ages() == {}, "an empty store reported waiting jobs"
        self._mixed_queue(store)
        before = store.database_time()
        found = ages.oldest_pending_ages()
        elapsed = (store.database_time() - before).total_seconds()
        assert set(found) == {1, 3}, f"priorities with due PENDING jobs are 1 and 3: {found}"
        for priority, expected in ((1, 100.0), (3, 10.0)):
            assert expected - _SLACK <= found[priority] <= expected + elapsed + 5.0, (
                f"priority {priority}: age {found[priority]:.3f} s, expected about "
                f"{expected:g} s (the oldest due job of that priority): {found}"
            )

    @contract("queue ages", Level.CORE)
    def test_a_job_counts_once_it_is_due_and_stops_once_claimed(self, store: JobStore) -> None:
        """A job enqueued 0.3 s ahead adds no age until it is due, then an age that
        grows from zero; claiming it (RUNNING) takes it out again.

        On failure: a future job was counted (the ``scheduled_at <= now`` filter is
        missing) or a claimed one still was (the ``status`` filter is).
        """
        ages = ages_store(store)
        job_id = self.enqueue(store, delay_seconds=0.3)
        assert ages.oldest_pending_ages() == {}, "a job due in 0.3 s already counted"
        self.sleep_past(0.5)
        priority = int(self.get(store, job_id).priority)
        first = ages.oldest_pending_ages()
        assert set(first) == {priority} and 0.0 <= first[priority] < 60.0, first
        self.sleep_past(0.2)
        later = ages.oldest_pending_ages()
        assert later[priority] >= first[priority] + 0.1, f"the age did not grow: {first} {later}"
        self.claim(store, job_id)
        assert self.get(store, job_id).status is JobStatus.RUNNING
        assert ages.oldest_pending_ages() == {}, "a RUNNING job still counted as waiting"

    @pytest.mark.parametrize("skew", sorted(SKEWS))
    @contract("clock", Level.ADVANCED)
    def test_pending_ages_are_on_the_database_clock(self, store: JobStore, skew: str) -> None:
        """With this process's clock two hours off, a job 100 s overdue is still about
        100 s old, and a job due in an hour is still not due.

        On failure: the age or the due test used this process's clock; use the
        database's, in the same read.
        """
        ages = ages_store(store)
        now = store.database_time()
        self.enqueue(store, priority=2, scheduled_at=now - timedelta(seconds=100))
        self.enqueue(store, priority=3, scheduled_at=now + timedelta(hours=1))
        with process_clock_shifted(SKEWS[skew]):
            found = ages.oldest_pending_ages()
        assert set(found) == {2} and 100.0 - _SLACK <= found[2] < 160.0, found

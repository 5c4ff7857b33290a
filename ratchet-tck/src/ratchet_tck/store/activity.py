"""The activity probe (``SupportsActivityProbe``): is any job RUNNING or due right now?

N/A for stores without the capability: drain monitors then list jobs instead.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from ratchet.spi import JobStore, SupportsActivityProbe
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase
from ratchet_tck.store.times import SKEWS, process_clock_shifted


def probe_store(store: JobStore) -> SupportsActivityProbe:
    if not isinstance(store, SupportsActivityProbe):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsActivityProbe")
    return store


class ActivityProbeContracts(StoreSuiteBase):
    @contract("activity probe", Level.CORE)
    def test_only_running_and_due_pending_jobs_count_as_activity(self, store: JobStore) -> None:
        """An empty store is idle; so is one holding only finished jobs (succeeded,
        dead-lettered, canceled) and a job due in an hour. A RUNNING job is activity, and
        so is a due PENDING job; once both have finished the store is idle again.

        On failure: ``True`` for the idle store means a status or ``scheduled_at <= now``
        filter is missing; ``False`` with a RUNNING job means the RUNNING probe is."""
        probe = probe_store(store)
        assert probe.has_due_or_running_jobs() is False, "an empty store reported activity"
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        failed = self.running(store)
        assert store.fail_job(failed.id, failed.claim_seq, error="x")
        assert store.cancel_job(self.enqueue(store))
        later = self.enqueue(store, scheduled_at=store.database_time() + timedelta(hours=1))
        assert probe.has_due_or_running_jobs() is False, (
            "finished jobs or a job due in an hour counted as activity"
        )
        running = self.running(store)
        assert probe.has_due_or_running_jobs() is True, "a RUNNING job was not activity"
        assert store.complete_job(running.id, running.claim_seq, result_json=None, result_type=None)
        assert probe.has_due_or_running_jobs() is False
        due = self.enqueue(store, scheduled_at=store.database_time() - timedelta(seconds=5))
        assert probe.has_due_or_running_jobs() is True, "a due PENDING job was not activity"
        assert store.cancel_job(due)
        assert store.cancel_job(later)
        assert probe.has_due_or_running_jobs() is False

    @pytest.mark.parametrize("priority", [0, 1, 2, 3, 4])
    @contract("activity probe", Level.CORE)
    def test_a_due_job_of_any_priority_is_activity(self, store: JobStore, priority: int) -> None:
        """One due job, at ``priority`` alone, behind many jobs of the same priority that
        are due later, is found.

        On failure: the probe reads some priorities only, or looks at a level's latest
        PENDING job instead of its earliest."""
        probe = probe_store(store)
        now = store.database_time()
        for minutes in range(1, 21):
            self.enqueue(store, priority=priority, scheduled_at=now + timedelta(minutes=minutes))
        assert probe.has_due_or_running_jobs() is False
        self.enqueue(store, priority=priority, scheduled_at=now - timedelta(seconds=1))
        assert probe.has_due_or_running_jobs() is True, f"a due job at priority {priority}"

    @contract("activity probe", Level.CORE)
    def test_a_job_becomes_activity_when_it_comes_due(self, store: JobStore) -> None:
        """A job enqueued 0.3 s ahead is not activity until it is due, then is.

        On failure: the probe compares ``scheduled_at`` with something other than
        database-now (a stale time, or the wrong direction)."""
        probe = probe_store(store)
        self.enqueue(store, delay_seconds=0.3)
        assert probe.has_due_or_running_jobs() is False, "a job due in 0.3 s already counted"
        self.sleep_past(0.5)
        assert probe.has_due_or_running_jobs() is True, "a job that came due did not count"

    @pytest.mark.parametrize("skew", sorted(SKEWS))
    @contract("clock", Level.ADVANCED)
    def test_the_activity_probe_is_on_the_database_clock(self, store: JobStore, skew: str) -> None:
        """With this process's clock two hours off, a job due in an hour is still not
        activity, and one a minute overdue still is.

        On failure: the due test used this process's clock; use the database's."""
        probe = probe_store(store)
        now = store.database_time()
        later = self.enqueue(store, scheduled_at=now + timedelta(hours=1))
        with process_clock_shifted(SKEWS[skew]):
            assert probe.has_due_or_running_jobs() is False
        assert store.cancel_job(later)
        self.enqueue(store, scheduled_at=now - timedelta(minutes=1))
        with process_clock_shifted(SKEWS[skew]):
            assert probe.has_due_or_running_jobs() is True

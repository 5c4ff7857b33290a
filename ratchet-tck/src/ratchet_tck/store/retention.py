"""ADVANCED: recurring fires exactly once; archive and purge of finished jobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial

from ratchet.spi import BackoffPolicy, JobStatus, JobStore, RecurringDefinition
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreFactory, StoreSuiteBase, new_job, raised, run_concurrently

FIRE = datetime(2031, 3, 4, 5, 6, tzinfo=UTC)


class RecurringContracts(StoreSuiteBase):
    @contract("recurring", Level.ADVANCED)
    def test_one_job_per_fire_even_after_it_finished(self, store: JobStore) -> None:
        """The first enqueue of ``(recurring id, fire time)`` creates the job; a second
        returns ``False`` and creates nothing, also after the first job finished.

        On failure: the fire record must be permanent and written atomically with the job.
        """
        first = new_job(recurring_id="nightly", business_key="nightly")
        assert store.enqueue_recurring_fire(first, fire_time=FIRE)
        assert not store.enqueue_recurring_fire(
            new_job(recurring_id="nightly", business_key="nightly"), fire_time=FIRE
        )
        claimed = self.claim(store, first.id)
        store.complete_job(first.id, claimed.claim_seq, result_json=None, result_type=None)
        late = new_job(recurring_id="nightly", business_key="nightly")
        assert not store.enqueue_recurring_fire(late, fire_time=FIRE)
        assert store.get_job(late.id) is None
        assert self.get(store, first.id).recurring_id == "nightly"

    @contract("recurring", Level.ADVANCED)
    def test_next_fire_waits_for_the_active_one(self, store: JobStore) -> None:
        """While the previous fire's job is active its business key blocks the next fire
        (``False``, nothing recorded); once it finished, the next fire enqueues."""
        first = new_job(recurring_id="r", business_key="r")
        assert store.enqueue_recurring_fire(first, fire_time=FIRE)
        blocked = new_job(recurring_id="r", business_key="r")
        assert not store.enqueue_recurring_fire(blocked, fire_time=FIRE + timedelta(minutes=1))
        store.cancel_job(first.id)
        retry = new_job(recurring_id="r", business_key="r")
        assert store.enqueue_recurring_fire(retry, fire_time=FIRE + timedelta(minutes=1))

    @contract("recurring", Level.ADVANCED)
    def test_concurrent_schedulers_create_one_job(self, stores: StoreFactory) -> None:
        """Eight store instances fire the same instant at once: exactly one job exists."""
        nodes = [stores() for _ in range(8)]
        results = run_concurrently(
            [
                partial(
                    s.enqueue_recurring_fire,
                    new_job(recurring_id="race", business_key="race"),
                    fire_time=FIRE,
                )
                for s in nodes
            ]
        )
        assert raised(results) == []
        assert results.count(True) == 1
        assert nodes[0].count_jobs()[JobStatus.PENDING] == 1

    @contract("recurring", Level.ADVANCED)
    def test_definitions_are_saved_replaced_listed_and_deleted(self, store: JobStore) -> None:
        """``save_recurring`` inserts or replaces by id (keeping ``created_at``); every field
        round-trips; ``delete_recurring`` removes it and reports whether it existed."""
        definition = RecurringDefinition(
            id="nightly-report",
            cron="0 2 * * *",
            zone="Europe/Paris",
            misfire="catch_up:3",
            name="reports.nightly",
            target="reports.jobs:nightly",
            args_json='["eu"]',
            kwargs_json='{"full": true}',
            priority=3,
            max_retries=5,
            backoff=BackoffPolicy.FIXED,
            backoff_ms=500,
            timeout_seconds=30.0,
            tags=("reports",),
            source="decorator",
        )
        store.save_recurring(definition)
        store.save_recurring(
            RecurringDefinition(id="a-first", cron="* * * * *", name="n", target="m:f")
        )
        [first, saved] = store.list_recurring()
        assert first.id == "a-first"
        assert saved.created_at is not None
        assert replace(saved, created_at=None) == definition
        store.save_recurring(replace(definition, cron="0 3 * * *"))
        updated = store.list_recurring()[1]
        assert (updated.cron, updated.created_at) == ("0 3 * * *", saved.created_at)
        assert store.delete_recurring("nightly-report") is True
        assert store.delete_recurring("nightly-report") is False
        assert [d.id for d in store.list_recurring()] == ["a-first"]

    @contract("recurring", Level.ADVANCED)
    def test_last_fire_counts_fired_and_skipped_instants(self, store: JobStore) -> None:
        """``last_recurring_fire`` is the latest recorded instant, fired or skipped; a skip
        is recorded once and blocks a later fire of the same instant."""
        assert store.last_recurring_fire("r") is None
        assert store.enqueue_recurring_fire(
            new_job(recurring_id="r", business_key="r"), fire_time=FIRE
        )
        assert store.last_recurring_fire("r") == FIRE
        later = FIRE + timedelta(hours=1)
        assert store.skip_recurring_fire("r", later) is True
        assert store.skip_recurring_fire("r", later) is False
        assert store.last_recurring_fire("r") == later
        assert not store.enqueue_recurring_fire(new_job(recurring_id="r"), fire_time=later)
        assert store.last_recurring_fire("other") is None

    @contract("recurring", Level.ADVANCED)
    def test_a_fired_instant_never_fires_again_after_delete_and_save(self, store: JobStore) -> None:
        """A schedule fires one instant and skips the next; it is deleted and saved again
        (and then replaced): neither instant fires again, ``last_recurring_fire`` still
        reports the skipped one, and the following instant fires.

        On failure: deleting or replacing the definition deletes its fire records (they
        must outlive it: the same id saved again is the same schedule), or fires are
        keyed on something the re-save changes (the definition's row id, ``created_at``).
        """
        definition = RecurringDefinition(id="cycle", cron="* * * * *", name="n", target="m:f")
        store.save_recurring(definition)
        fired = new_job(recurring_id="cycle", business_key="cycle")
        assert store.enqueue_recurring_fire(fired, fire_time=FIRE)
        claimed = self.claim(store, fired.id)
        store.complete_job(fired.id, claimed.claim_seq, result_json=None, result_type=None)
        skipped = FIRE + timedelta(minutes=1)
        assert store.skip_recurring_fire("cycle", skipped)
        assert store.delete_recurring("cycle")
        store.save_recurring(definition)
        store.save_recurring(replace(definition, cron="*/1 * * * *"))
        for instant in (FIRE, skipped):
            again = new_job(recurring_id="cycle", business_key="cycle")
            assert not store.enqueue_recurring_fire(again, fire_time=instant), (
                f"instant {instant} fired again after the schedule was deleted and saved"
            )
            assert store.get_job(again.id) is None
            assert not store.skip_recurring_fire("cycle", instant)
        assert store.last_recurring_fire("cycle") == skipped
        following = new_job(recurring_id="cycle", business_key="cycle")
        assert store.enqueue_recurring_fire(following, fire_time=FIRE + timedelta(minutes=2))

    @contract("recurring", Level.ADVANCED)
    def test_cancel_by_business_key_and_by_tag(self, store: JobStore) -> None:
        """``cancel_by_business_key`` and ``cancel_by_tag`` cancel PENDING jobs only and
        count them; running jobs and other tags are untouched."""
        keyed = self.enqueue(store, business_key="hourly", tags=("reports",))
        tagged = [self.enqueue(store, tags=("reports",)) for _ in range(2)]
        running = self.running(store, tags=("reports",))
        other = self.enqueue(store, tags=("billing",))
        assert store.cancel_by_business_key("hourly") == 1
        assert store.cancel_by_business_key("hourly") == 0
        assert store.cancel_by_tag("reports") == 2
        for job_id in (keyed, *tagged):
            assert self.get(store, job_id).status is JobStatus.CANCELED
        assert self.get(store, running.id).status is JobStatus.RUNNING
        assert self.get(store, other).status is JobStatus.PENDING
        assert store.cancel_by_tag("nothing") == 0


class ArchiveContracts(StoreSuiteBase):
    def _finished(self, store: JobStore, status: JobStatus) -> str:
        job = self.running(store)
        if status is JobStatus.SUCCEEDED:
            store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        else:
            store.fail_job(job.id, job.claim_seq, error="x")
        return job.id

    @contract("archive", Level.ADVANCED)
    def test_archive_moves_old_finished_jobs_in_batches(self, store: JobStore) -> None:
        """Finished jobs older than the cut-off leave the live table, ``batch_size`` at a
        time; pending, running and recent jobs stay."""
        finished = [self._finished(store, JobStatus.SUCCEEDED) for _ in range(3)]
        finished.append(self._finished(store, JobStatus.FAILED))
        canceled = self.enqueue(store)
        store.cancel_job(canceled)
        pending = self.enqueue(store)
        running = self.running(store)
        assert store.archive_finished_jobs(older_than_seconds=3600, batch_size=10) == 0
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=3) == 3
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=3) == 2
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=3) == 0
        assert all(store.get_job(i) is None for i in [*finished, canceled])
        assert self.get(store, pending).status is JobStatus.PENDING
        assert self.get(store, running.id).status is JobStatus.RUNNING

    @contract("archive", Level.ADVANCED)
    def test_purge_deletes_old_dead_letters_only(self, store: JobStore) -> None:
        """``purge_failed_jobs`` deletes FAILED jobs finished before the cut-off and nothing
        else."""
        dead = self._finished(store, JobStatus.FAILED)
        ok = self._finished(store, JobStatus.SUCCEEDED)
        assert store.purge_failed_jobs(older_than_seconds=3600) == 0
        self.sleep_past(0.05)
        assert store.purge_failed_jobs(older_than_seconds=0) == 1
        assert store.get_job(dead) is None
        assert self.get(store, ok).status is JobStatus.SUCCEEDED

    @contract("archive", Level.ADVANCED)
    def test_purge_executions_keeps_open_records(self, store: JobStore) -> None:
        """``purge_executions`` deletes closed records older than the cut-off, at most
        ``batch_size`` per call, and never a RUNNING one."""
        done = [self._finished(store, JobStatus.SUCCEEDED) for _ in range(3)]
        running = self.running(store)
        assert store.purge_executions(older_than_seconds=3600, batch_size=10) == 0
        self.sleep_past(0.05)
        assert store.purge_executions(older_than_seconds=0, batch_size=2) == 2
        assert store.purge_executions(older_than_seconds=0, batch_size=2) == 1
        assert all(store.list_executions(i) == [] for i in done)
        assert len(store.list_executions(running.id)) == 1
        assert self.get(store, done[0]).status is JobStatus.SUCCEEDED

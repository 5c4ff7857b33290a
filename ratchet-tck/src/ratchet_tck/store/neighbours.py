"""ADVANCED: operations aimed at some statuses, with a job in every neighbouring status.

Bulk cancels reach PENDING jobs only; purge reaches FAILED jobs only; archive reaches
finished jobs only, however old the others are. Every age cut-off of retention is measured
on the finish time (``finished_at``), never on when the job was created or started.
"""

from __future__ import annotations

from typing import Any

from ratchet.spi import JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase


class NeighbouringStateContracts(StoreSuiteBase):
    def _one_of_each(self, store: JobStore, **overrides: Any) -> dict[str, str]:
        """One job in every status (and a PENDING one waiting for a retry, one released
        and one retried from the dead-letter queue), all with ``overrides``."""
        jobs: dict[str, str] = {"PENDING": self.enqueue(store, **overrides)}
        names = ("SUCCEEDED", "FAILED", "RETRY-WAITING", "RELEASED", "RETRIED", "RUNNING")
        claims = {name: self.running(store, **overrides) for name in names}
        for name, job in claims.items():
            jobs[name] = job.id
            if name == "SUCCEEDED":
                store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
            elif name in ("FAILED", "RETRIED"):
                store.fail_job(job.id, job.claim_seq, error="x")
            elif name == "RETRY-WAITING":
                store.schedule_retry(job.id, job.claim_seq, error="x", delay_seconds=3600)
            elif name == "RELEASED":
                store.release_claim(job.id, job.claim_seq, message="drain")
        assert store.retry_failed_job(jobs["RETRIED"])
        canceled = self.enqueue(store, **overrides)
        store.cancel_job(canceled)
        jobs["CANCELED"] = canceled
        return jobs

    def _statuses(self, store: JobStore, jobs: dict[str, str]) -> dict[str, str | None]:
        return {
            name: job.status.value if (job := store.get_job(job_id)) else None
            for name, job_id in jobs.items()
        }

    @staticmethod
    def _expected(jobs: dict[str, str]) -> dict[str, str | None]:
        return {
            name: "PENDING" if name in ("RETRY-WAITING", "RELEASED", "RETRIED") else name
            for name in jobs
        }

    @contract("recurring", Level.ADVANCED)
    def test_cancel_by_business_key_spares_running_and_finished_holders(
        self, store: JobStore
    ) -> None:
        """``cancel_by_business_key`` with the key held by a RUNNING job cancels nothing
        (0), and leaves the finished jobs that once held the key as they were; with a
        PENDING holder it cancels exactly that one.

        On failure: the statement's ``status = 'PENDING'`` condition is missing or widened
        (``IN ('PENDING', 'RUNNING')``): a running job must finish or fail, not vanish.
        """
        finished = self.running(store, business_key="k")
        store.complete_job(finished.id, finished.claim_seq, result_json="1", result_type="int")
        holder = self.running(store, business_key="k")
        assert store.cancel_by_business_key("k") == 0, "a RUNNING holder was canceled"
        assert self.get(store, holder.id).status is JobStatus.RUNNING
        assert self.get(store, finished.id).status is JobStatus.SUCCEEDED
        store.fail_job(holder.id, holder.claim_seq, error="x")
        pending = self.enqueue(store, business_key="k")
        assert store.cancel_by_business_key("k") == 1
        assert [self.get(store, j).status for j in (finished.id, holder.id, pending)] == [
            JobStatus.SUCCEEDED,
            JobStatus.FAILED,
            JobStatus.CANCELED,
        ]

    @contract("recurring", Level.ADVANCED)
    def test_cancel_by_tag_reaches_pending_jobs_only(self, store: JobStore) -> None:
        """Of jobs in every status carrying the tag, ``cancel_by_tag`` cancels the PENDING
        ones (new, waiting for a retry, released, retried from the dead-letter queue) and
        counts them; running, succeeded, failed and already canceled jobs stay as they are.

        On failure: the statement lacks ``status = 'PENDING'``.
        """
        jobs = self._one_of_each(store, tags=("sweep",))
        assert store.cancel_by_tag("sweep") == 4
        expected = {
            name: "CANCELED" if status == "PENDING" else status
            for name, status in self._expected(jobs).items()
        }
        assert self._statuses(store, jobs) == expected

    @contract("archive", Level.ADVANCED)
    def test_purge_deletes_failed_jobs_only(self, store: JobStore) -> None:
        """With a job in every status old enough, ``purge_failed_jobs`` deletes the FAILED
        one only; SUCCEEDED and CANCELED jobs (finished too) and unfinished jobs stay.

        On failure: the purge's status condition takes in other finished statuses
        (``status IN ('FAILED', 'CANCELED')``, ``status <> 'SUCCEEDED'``).
        """
        jobs = self._one_of_each(store)
        self.sleep_past(0.05)
        assert store.purge_failed_jobs(older_than_seconds=0) == 1
        assert self._statuses(store, jobs) == {**self._expected(jobs), "FAILED": None}

    @contract("archive", Level.ADVANCED)
    def test_archive_takes_finished_jobs_only(self, store: JobStore) -> None:
        """With a job in every status older than the cut-off, archiving moves the
        SUCCEEDED, FAILED and CANCELED ones; PENDING jobs (new, waiting for a retry,
        released, retried from the dead-letter queue) and the RUNNING one stay live.

        On failure: the archive's status condition is missing or ages unfinished jobs by
        another time (``COALESCE(finished_at, updated_at)``, ``created_at``).
        """
        jobs = self._one_of_each(store)
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) == 3
        finished = ("SUCCEEDED", "FAILED", "CANCELED")
        assert self._statuses(store, jobs) == {
            **self._expected(jobs),
            **dict.fromkeys(finished),
        }

    @contract("archive", Level.ADVANCED)
    def test_archived_jobs_leave_every_live_view(self, store: JobStore) -> None:
        """An archived job is gone from ``get_job``, ``list_jobs`` (with and without status
        and tag filters) and ``count_jobs``.

        On failure: a read still includes the archive table (or archived rows, when archive
        is a flag on the job row).
        """
        job = self.running(store, tags=("archived",))
        store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=10) == 1
        assert store.get_job(job.id) is None
        assert store.list_jobs() == []
        assert store.list_jobs(status=JobStatus.SUCCEEDED) == []
        assert store.list_jobs(tag="archived") == []
        assert store.count_jobs() == dict.fromkeys(JobStatus, 0), "count_jobs counts archived jobs"


class CutOffContracts(StoreSuiteBase):
    @contract("archive", Level.ADVANCED)
    def test_cut_offs_apply_to_the_finish_time(self, store: JobStore) -> None:
        """Jobs created (and claimed) 1 s before they finished are not old at a 0.5 s cut-off
        right after finishing: archive, purge and execution purge leave them; 0.7 s later
        they are old and all three take them.

        On failure: the named cut-off compares ``created_at``, ``scheduled_at``,
        ``claimed_at`` or an execution's ``started_at`` instead of the finish time.
        """
        succeeded, failed = self.running(store), self.running(store)
        canceled = self.enqueue(store, delay_seconds=3600)
        self.sleep_past(1.0)
        store.complete_job(succeeded.id, succeeded.claim_seq, result_json=None, result_type=None)
        store.fail_job(failed.id, failed.claim_seq, error="x")
        store.cancel_job(canceled)
        early = {
            "purge_failed_jobs": store.purge_failed_jobs(older_than_seconds=0.5),
            "archive_finished_jobs": store.archive_finished_jobs(
                older_than_seconds=0.5, batch_size=10
            ),
            "purge_executions": store.purge_executions(older_than_seconds=0.5, batch_size=10),
        }
        assert early == dict.fromkeys(early, 0), (
            f"taken 1 s after creation, 0 s after finish: {early}"
        )
        self.sleep_past(0.7)
        late = {
            "purge_failed_jobs": store.purge_failed_jobs(older_than_seconds=0.5),
            "archive_finished_jobs": store.archive_finished_jobs(
                older_than_seconds=0.5, batch_size=10
            ),
            "purge_executions": store.purge_executions(older_than_seconds=0.5, batch_size=10),
        }
        assert late == {"purge_failed_jobs": 1, "archive_finished_jobs": 2, "purge_executions": 2}

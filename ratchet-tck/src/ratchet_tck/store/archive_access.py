"""Reading and purging the archive, and the batched dead-letter purge
(``SupportsArchiveAccess``).

N/A for stores without the capability: archived jobs then cannot be read or purged, and
the dead-letter queue is purged with one ``purge_failed_jobs`` call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ratchet.errors import DuplicateIdempotencyKeyError
from ratchet.spi import JobStatus, JobStore, SupportsArchiveAccess
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase

# Far longer than any test runs: nothing created by the test is older than this.
_AN_HOUR = 3600.0


def archive_store(store: JobStore) -> SupportsArchiveAccess:
    if not isinstance(store, SupportsArchiveAccess):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsArchiveAccess")
    return store


class ArchiveAccessContracts(StoreSuiteBase):
    def finished(self, store: JobStore, status: JobStatus, **overrides: Any) -> str:
        """A fresh job ended in ``status`` (SUCCEEDED with a result, FAILED with error
        ``"boom"``, or CANCELED), finished a little after the last one, so that finish
        times are ordered even on a millisecond clock."""
        if status is JobStatus.CANCELED:
            job_id = self.enqueue(store, **overrides)
            assert store.cancel_job(job_id)
        else:
            job = self.running(store, **overrides)
            job_id = job.id
            if status is JobStatus.SUCCEEDED:
                result = json.dumps({"rows": 3})
                assert store.complete_job(
                    job.id, job.claim_seq, result_json=result, result_type=None
                )
            else:
                assert store.fail_job(job.id, job.claim_seq, error="boom")
        self.sleep_past(0.01)
        return job_id

    def archive_all(self, store: JobStore, expected: int) -> None:
        self.sleep_past(0.02)
        moved = store.archive_finished_jobs(older_than_seconds=0, batch_size=1000)
        assert moved == expected, f"archived {moved} jobs, expected {expected}"

    @contract("archive access", Level.CORE)
    def test_an_archived_job_is_read_back_as_it_was_archived(self, store: JobStore) -> None:
        """A finished job (tags, result, attempts, times) is returned by ``get_archived_job``
        exactly as ``get_job`` returned it before archiving; ``get_job`` no longer finds
        it; a live job and an unknown id are not in the archive (``None``).

        On failure: read ``ratchet_job_archive`` (not the live table) by id, decoding its
        row with the live table's column order; the archive must copy every column.
        """
        archive = archive_store(store)
        done = self.finished(store, JobStatus.SUCCEEDED, tags=("report", "eu"))
        dead = self.finished(store, JobStatus.FAILED, business_key="nightly")
        before = {job_id: self.get(store, job_id) for job_id in (done, dead)}
        self.archive_all(store, 2)
        live = self.enqueue(store)
        for job_id, job in before.items():
            assert store.get_job(job_id) is None, f"archived job {job_id} is still live"
            archived = archive.get_archived_job(job_id)
            assert archived == job, f"archived as\n{archived}\nbut was\n{job}"
        assert archive.get_archived_job(live) is None, "a live job was read from the archive"
        assert archive.get_archived_job("no-such-job") is None

    @contract("archive access", Level.CORE)
    def test_archived_jobs_are_listed_newest_first_by_status_and_whole_tag(
        self, store: JobStore
    ) -> None:
        """Archived jobs are listed newest first (``created_at``, then id), filtered by
        status, by whole tag (``x`` never matches ``xx``) and by both, at most ``limit``
        (0: none); live jobs, of any status, are never listed.

        On failure: select from the archive only, ``ORDER BY created_at DESC, id DESC``,
        and match a tag as a whole element of the archived row's tags.
        """
        archive = archive_store(store)
        ok_x = self.finished(store, JobStatus.SUCCEEDED, tags=("x",))
        dead_x = self.finished(store, JobStatus.FAILED, tags=("x", "y"))
        dead_xx = self.finished(store, JobStatus.FAILED, tags=("xx",))
        canceled = self.finished(store, JobStatus.CANCELED, tags=("x",))
        self.archive_all(store, 4)
        self.finished(store, JobStatus.FAILED, tags=("x",))  # live: never listed
        self.enqueue(store, tags=("x",))

        def ids(
            status: JobStatus | None = None, tag: str | None = None, limit: int = 100
        ) -> list[str]:
            return [j.id for j in archive.list_archived_jobs(status=status, tag=tag, limit=limit)]

        assert ids() == [canceled, dead_xx, dead_x, ok_x], "everything archived, newest first"
        assert ids(limit=2) == [canceled, dead_xx], "limit 2: the two newest"
        assert ids(limit=0) == [], "limit 0 listed jobs"
        assert ids(status=JobStatus.FAILED) == [dead_xx, dead_x], "status FAILED"
        assert ids(tag="x") == [canceled, dead_x, ok_x], "tag 'x' (not 'xx')"
        assert ids(status=JobStatus.FAILED, tag="x") == [dead_x], "status and tag"
        assert ids(tag="y") == [dead_x], "a second tag of the job"
        assert ids(status=JobStatus.PENDING) == [], "no archived job is PENDING"
        assert ids(tag="nothing") == []

    @contract("archive access", Level.CORE)
    def test_archive_purge_respects_the_cut_off_and_the_batch_size(self, store: JobStore) -> None:
        """``purge_archived_jobs`` deletes nothing younger than the cut-off, then the
        oldest finished archived jobs ``batch_size`` at a time (0: none); live jobs, old
        dead letters and finished jobs included, are never touched.

        On failure: delete from the archive only, ``finished_at`` before database-now
        minus the age, ``ORDER BY finished_at`` with the batch as ``LIMIT``.
        """
        archive = archive_store(store)
        archived = [self.finished(store, JobStatus.SUCCEEDED) for _ in range(3)]
        self.archive_all(store, 3)
        live_dead = self.finished(store, JobStatus.FAILED)
        live_done = self.finished(store, JobStatus.SUCCEEDED)
        pending = self.enqueue(store)
        self.sleep_past(0.02)
        assert archive.purge_archived_jobs(older_than_seconds=_AN_HOUR, batch_size=100) == 0, (
            "purged archived jobs younger than the cut-off"
        )
        assert archive.purge_archived_jobs(older_than_seconds=0, batch_size=0) == 0, "batch 0"
        assert archive.purge_archived_jobs(older_than_seconds=0, batch_size=2) == 2
        left = [j for j in archived if archive.get_archived_job(j) is not None]
        assert left == archived[2:], (
            f"after a batch of 2 the archive holds {left}: not oldest first"
        )
        assert archive.purge_archived_jobs(older_than_seconds=0, batch_size=2) == 1
        assert archive.purge_archived_jobs(older_than_seconds=0, batch_size=2) == 0
        for job_id, status in (
            (live_dead, JobStatus.FAILED),
            (live_done, JobStatus.SUCCEEDED),
            (pending, JobStatus.PENDING),
        ):
            assert self.get(store, job_id).status is status, f"the archive purge touched {status}"

    @contract("archive access", Level.CORE)
    def test_dead_letter_purge_takes_old_failed_jobs_only_in_batches(self, store: JobStore) -> None:
        """``purge_dead_letters`` deletes nothing younger than the cut-off, then the oldest
        FAILED live jobs ``batch_size`` at a time (0: none); SUCCEEDED, CANCELED, PENDING
        and RUNNING jobs and the archive (an archived dead letter included) stay.

        On failure: select ``status = 'FAILED'`` live jobs only, ``finished_at`` before the
        cut-off, ``ORDER BY finished_at`` with the batch as ``LIMIT``, and delete exactly
        those (with their tags).
        """
        archive = archive_store(store)
        archived = self.finished(store, JobStatus.FAILED)
        self.archive_all(store, 1)
        dead = [self.finished(store, JobStatus.FAILED, tags=("t",)) for _ in range(3)]
        others = {
            self.finished(store, JobStatus.SUCCEEDED): JobStatus.SUCCEEDED,
            self.finished(store, JobStatus.CANCELED): JobStatus.CANCELED,
            self.running(store).id: JobStatus.RUNNING,
            self.enqueue(store): JobStatus.PENDING,
        }
        self.sleep_past(0.02)
        assert archive.purge_dead_letters(older_than_seconds=_AN_HOUR, batch_size=100) == 0, (
            "purged dead letters younger than the cut-off"
        )
        assert archive.purge_dead_letters(older_than_seconds=0, batch_size=0) == 0, "batch 0"
        assert archive.purge_dead_letters(older_than_seconds=0, batch_size=2) == 2
        left = [j for j in dead if store.get_job(j) is not None]
        assert left == dead[2:], f"after a batch of 2 the dead letters left are {left}"
        assert archive.purge_dead_letters(older_than_seconds=0, batch_size=2) == 1
        assert archive.purge_dead_letters(older_than_seconds=0, batch_size=2) == 0
        assert store.list_jobs(tag="t") == [], "a purged dead letter is still listed by tag"
        for job_id, status in others.items():
            assert self.get(store, job_id).status is status, f"the dead-letter purge took {status}"
        assert archive.get_archived_job(archived) is not None, "the purge reached the archive"

    @contract("archive access", Level.CORE)
    def test_idempotency_keys_survive_both_purges(self, store: JobStore) -> None:
        """A job archived then purged from the archive, and a dead letter purged, keep
        their idempotency keys: enqueueing either key again raises
        ``DuplicateIdempotencyKeyError`` and the key still maps to the original id.

        On failure: the purges must delete the job rows only, never the permanent key
        records.
        """
        archive = archive_store(store)
        done = self.finished(store, JobStatus.SUCCEEDED, idempotency_key="archived-key")
        self.archive_all(store, 1)
        dead = self.finished(store, JobStatus.FAILED, idempotency_key="dead-key")
        self.sleep_past(0.02)
        assert archive.purge_archived_jobs(older_than_seconds=0, batch_size=100) == 1
        assert archive.purge_dead_letters(older_than_seconds=0, batch_size=100) == 1
        for key, original in (("archived-key", done), ("dead-key", dead)):
            assert store.find_job_id_by_idempotency_key(key) == original, f"key {key!r} lost"
            with pytest.raises(DuplicateIdempotencyKeyError):
                self.enqueue(store, idempotency_key=key)
        assert archive.get_archived_job(done) is None and store.get_job(dead) is None

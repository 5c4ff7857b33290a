"""Bulk dead-letter retry (``SupportsBulkRetry``): a batch of FAILED jobs back to PENDING.

N/A for stores without the capability: ``app.retry_jobs`` then retries one job at a time.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from ratchet.spi import JobStatus, JobStore, SupportsBulkRetry
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    raised,
    run_concurrently,
)

# Dead letters of the race: enough that the callers' batches overlap many times.
_RACED = 24


def bulk_store(store: JobStore) -> SupportsBulkRetry:
    if not isinstance(store, SupportsBulkRetry):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsBulkRetry")
    return store


def retry(
    store: SupportsBulkRetry, *, name: str | None = None, tag: str | None = None, limit: int = 100
) -> list[str]:
    return store.retry_failed_jobs(name=name, tag=tag, limit=limit)


class BulkRetryContracts(StoreSuiteBase):
    def failed(self, store: JobStore, **overrides: Any) -> str:
        """A fresh dead-lettered job (error ``"boom"``), failed a little after the last
        one, so that failures are ordered even on a millisecond clock."""
        job = self.running(store, **overrides)
        assert store.fail_job(job.id, job.claim_seq, error="boom")
        self.sleep_past(0.01)
        return job.id

    @contract("bulk retry", Level.CORE)
    def test_bulk_retry_moves_only_failed_jobs_back_to_pending(self, store: JobStore) -> None:
        """Three dead letters come back PENDING, attempts 0, last error cleared, and the
        ids returned are exactly theirs; PENDING, RUNNING, SUCCEEDED and CANCELED jobs are
        untouched. A second call finds nothing left.

        On failure: select ``status = 'FAILED'`` only and update each job with the same
        changes as ``retry_failed_job``; return the ids whose update matched.
        """
        bulk = bulk_store(store)
        dead = [self.failed(store) for _ in range(3)]
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        canceled = self.enqueue(store)
        assert store.cancel_job(canceled)
        running = self.running(store)
        pending = self.enqueue(store)
        returned = retry(bulk)
        assert sorted(returned) == sorted(dead), f"retried {returned}, dead letters {dead}"
        for job_id in dead:
            job = self.get(store, job_id)
            assert (job.status, job.attempts, job.last_error) == (JobStatus.PENDING, 0, None), (
                f"job {job_id} after a bulk retry: {job.status} attempts={job.attempts} "
                f"last_error={job.last_error!r}"
            )
        for job_id, status in (
            (done.id, JobStatus.SUCCEEDED),
            (canceled, JobStatus.CANCELED),
            (running.id, JobStatus.RUNNING),
            (pending, JobStatus.PENDING),
        ):
            assert self.get(store, job_id).status is status, f"a {status} job was changed"
        assert retry(bulk) == [], "a second bulk retry found dead letters again"

    @contract("bulk retry", Level.CORE)
    def test_bulk_retry_filters_by_exact_name_and_whole_tag(self, store: JobStore) -> None:
        """Of dead letters named ``tck.a``/``tck.b`` and tagged ``x``/``y``, a name filter
        retries only that name, a tag filter only that tag (never a tag merely starting
        with it), and both only jobs matching both.

        On failure: ``name = :name`` and the tag table's ``tag = :tag``, each applied when
        the argument is not ``None``.
        """
        bulk = bulk_store(store)
        a_x = self.failed(store, name="tck.a", tags=("x",))
        a_y = self.failed(store, name="tck.a", tags=("y",))
        b_x = self.failed(store, name="tck.b", tags=("x",))
        b_xx = self.failed(store, name="tck.b", tags=("xx",))
        assert retry(bulk, name="tck.a", tag="x") == [a_x], "name and tag together"
        assert retry(bulk, name="tck.a") == [a_y], "name alone"
        assert retry(bulk, tag="x") == [b_x], "tag alone (and not the tag 'xx')"
        assert self.get(store, b_xx).status is JobStatus.FAILED, "a filtered-out job moved"
        assert retry(bulk, name="tck.c") == [], "an unknown name matched"

    @contract("bulk retry", Level.CORE)
    def test_bulk_retry_takes_at_most_limit_oldest_failures_first(self, store: JobStore) -> None:
        """With four dead letters (and finished or waiting jobs older than them), a limit
        of 2 retries the two that failed first, then the next two; a limit of 0 retries
        nothing.

        On failure: order the FAILED jobs by ``finished_at`` (then id), ascending, and
        apply the limit to FAILED jobs only (a status filter missing lets others take
        places of the batch).
        """
        bulk = bulk_store(store)
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        self.enqueue(store)
        self.sleep_past(0.01)
        dead = [self.failed(store) for _ in range(4)]
        assert retry(bulk, limit=0) == [], "limit 0 retried jobs"
        assert all(self.get(store, d).status is JobStatus.FAILED for d in dead)
        first = retry(bulk, limit=2)
        assert sorted(first) == sorted(dead[:2]), (
            f"limit 2 retried {first}; the oldest failures are {dead[:2]} (all: {dead})"
        )
        assert sorted(retry(bulk, limit=2)) == sorted(dead[2:]), "the next batch"

    @contract("bulk retry", Level.BEHAVIORAL)
    def test_bulk_retry_skips_jobs_whose_business_key_is_held(self, store: JobStore) -> None:
        """A dead letter whose business key an active job took meanwhile stays FAILED
        (error kept) and the call neither raises nor gives up the rest of the batch; of
        two dead letters sharing a free key, only the older one is retried (it holds the
        key); once the holder is canceled, the next call retries the skipped job.

        On failure: leave out of the selection jobs whose key an active job holds (a
        ``NOT EXISTS`` on PENDING/RUNNING jobs with that key), and retry only the first
        candidate of each key in a batch.
        """
        bulk = bulk_store(store)
        held = self.failed(store, business_key="held")
        older = self.failed(store, business_key="shared")
        younger = self.failed(store, business_key="shared")
        free = self.failed(store)
        taker = self.enqueue(store, business_key="held")
        returned = retry(bulk)
        assert sorted(returned) == sorted([older, free]), (
            f"retried {returned}; expected the keyless job and the older 'shared' one"
        )
        for job_id in (held, younger):
            job = self.get(store, job_id)
            assert (job.status, job.last_error) == (JobStatus.FAILED, "boom"), (
                f"a skipped job changed: {job.status} {job.last_error!r}"
            )
        holder = store.find_active_job_by_business_key("shared")
        assert holder is not None and holder.id == older, "the older failure holds the key"
        assert store.cancel_job(taker)
        assert retry(bulk) == [held], "the skipped job was not retried once its key was free"

    @contract("bulk retry", Level.ADVANCED)
    def test_racing_bulk_retries_never_return_a_job_twice(self, stores: StoreFactory) -> None:
        """Two store instances drain the dead letters in batches of 3 while a third
        retries them one by one, newest first: every dead letter is retried exactly once
        in all (no id is returned by two callers, none is left FAILED).

        On failure: the selection is read outside the retrying transaction, or its rows
        are not locked (``FOR UPDATE SKIP LOCKED``), and the update does not re-check
        ``status = 'FAILED'`` (its row count must decide what is returned).
        """
        setup = stores()
        bulk_store(setup)
        dead = [self.failed(setup) for _ in range(_RACED)]
        first, second, single = stores(), stores(), stores()

        def drain(store: JobStore) -> list[str]:
            got: list[str] = []
            while batch := retry(bulk_store(store), limit=3):
                got += batch
            return got

        def one_by_one() -> list[str]:
            return [job_id for job_id in reversed(dead) if single.retry_failed_job(job_id)]

        results = run_concurrently([partial(drain, first), partial(drain, second), one_by_one])
        assert raised(results) == [], raised(results)
        returned = results[0] + results[1] + results[2]
        twice = sorted({j for j in returned if returned.count(j) > 1})
        assert twice == [], f"retried by two callers: {twice}"
        left = [j for j in dead if self.get(setup, j).status is JobStatus.FAILED]
        assert left == [] and sorted(returned) == sorted(dead), f"left FAILED: {left}"

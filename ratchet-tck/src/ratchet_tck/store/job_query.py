"""Job queries (``SupportsJobQuery``): the filtered, paginated listing, the dead letters
grouped by cause and the execution counts over time that the dashboard shows.

N/A for stores without the capability: the dashboard cannot list, group or count their
jobs.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ratchet.spi import (
    DeadLetterGroup,
    ExecutionBucket,
    ExecutionStatus,
    JobPage,
    JobQuery,
    JobStatus,
    JobStore,
    SupportsChains,
    SupportsJobPause,
    SupportsJobQuery,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase, new_job

_AN_HOUR = 3600.0
# Apart on a millisecond clock (MongoDB keeps milliseconds).
_APART = 0.01


def query_store(store: JobStore) -> SupportsJobQuery:
    if not isinstance(store, SupportsJobQuery):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsJobQuery")
    return store


def query_id() -> str:
    """A job id of lowercase hex, one length: its byte order is every database
    collation's order too, and it is random, so id order is not enqueue order."""
    return "q" + uuid.uuid4().hex


def listed(store: SupportsJobQuery, **filters: Any) -> list[str]:
    """The ids of the first page of ``JobQuery(**filters)`` (limit 1000 unless given)."""
    filters.setdefault("limit", 1000)
    return [job.id for job in store.query_jobs(JobQuery(**filters)).jobs]


def newest_first(store: JobStore, ids: Iterable[str]) -> list[str]:
    """``ids`` in the documented order: ``created_at`` descending, then id descending,
    from the stored times."""
    jobs = [store.get_job(job_id) for job_id in ids]
    assert all(job is not None for job in jobs), "a job of the test disappeared"
    stored = [job for job in jobs if job is not None]
    return [job.id for job in sorted(stored, key=lambda j: (j.created_at, j.id), reverse=True)]


def walk(store: SupportsJobQuery, query: JobQuery) -> list[JobPage]:
    """Every page of ``query``, following ``next`` until it is ``None`` (bounded)."""
    pages: list[JobPage] = []
    after = query.after
    for _ in range(1000):
        page = store.query_jobs(JobQuery(**{**_fields(query), "after": after}))
        assert len(page.jobs) <= query.limit, f"a page of limit {query.limit} had {len(page.jobs)}"
        pages.append(page)
        if page.next is None:
            return pages
        assert page.jobs, "an empty page handed out a next cursor"
        after = page.next
    raise AssertionError("the listing never ended: next is never None")


def _fields(query: JobQuery) -> dict[str, Any]:
    return {name: getattr(query, name) for name in JobQuery.__dataclass_fields__}


class JobQueryContracts(StoreSuiteBase):
    def spaced(self, store: JobStore, **overrides: Any) -> str:
        """A fresh job created a little after the previous one."""
        overrides.setdefault("id", query_id())
        job_id = self.enqueue(store, **overrides)
        self.sleep_past(_APART)
        return job_id

    def tied(self, store: JobStore, count: int, **overrides: Any) -> list[str]:
        """``count`` jobs enqueued in one call (on most stores one ``created_at``, so
        their order is decided by id alone), then a pause."""
        jobs = [new_job(id=query_id(), **overrides) for _ in range(count)]
        store.enqueue_many(jobs)
        self.sleep_past(_APART)
        return [job.id for job in jobs]

    def ended(
        self, store: JobStore, status: JobStatus, *, error: str = "boom", **overrides: Any
    ) -> str:
        """A fresh job in ``status``: RUNNING (claimed), SUCCEEDED, FAILED with ``error``,
        or CANCELED; PENDING is a plain enqueue, PAUSED one paused (``SupportsJobPause``),
        WAITING one enqueued with the ``depends_on`` given (``SupportsChains``)."""
        overrides.setdefault("id", query_id())
        if status in (JobStatus.PENDING, JobStatus.WAITING):
            assert (status is JobStatus.WAITING) == ("depends_on" in overrides)
            return self.spaced(store, **overrides)
        if status is JobStatus.PAUSED:
            job_id = self.spaced(store, **overrides)
            assert isinstance(store, SupportsJobPause) and store.pause_job(job_id)
            return job_id
        if status is JobStatus.CANCELED:
            job_id = self.spaced(store, **overrides)
            assert store.cancel_job(job_id)
            return job_id
        claimed = self.running(store, **overrides)
        if status is JobStatus.SUCCEEDED:
            assert store.complete_job(
                claimed.id, claimed.claim_seq, result_json=None, result_type=None
            )
        elif status is JobStatus.FAILED:
            assert store.fail_job(claimed.id, claimed.claim_seq, error=error)
        self.sleep_past(_APART)
        return claimed.id

    # -- the listing ---------------------------------------------------------------------

    @contract("job query", Level.CORE)
    def test_query_lists_live_jobs_newest_first_ties_broken_by_id(self, store: JobStore) -> None:
        """With no filter, every live job is listed newest first: ``created_at``
        descending, then id descending (jobs enqueued in one call usually share their
        ``created_at``, so id alone orders them); archived jobs are not listed.

        On failure: ``ORDER BY created_at DESC, id DESC`` on the live table only.
        """
        queries = query_store(store)
        archived = self.ended(store, JobStatus.SUCCEEDED)
        self.sleep_past(0.02)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) == 1
        older = self.spaced(store)
        batch = self.tied(store, 6)
        newer = self.spaced(store)
        expected = newest_first(store, [older, *batch, newer])
        assert expected[0] == newer and expected[-1] == older
        got = listed(queries)
        assert archived not in got, "an archived job was listed"
        assert got == expected, f"listed\n{got}\nexpected (created_at, id descending)\n{expected}"

    @contract("job query", Level.CORE)
    def test_query_filters_by_any_of_the_statuses_given(self, store: JobStore) -> None:
        """``statuses`` keeps the jobs in any of the statuses given (one or several);
        empty means every status.

        On failure: each status asked for must be read, and only those (a per-status
        branch read although its status was not asked for lists its jobs anyway).
        """
        queries = query_store(store)
        optional = {JobStatus.PAUSED: SupportsJobPause, JobStatus.WAITING: SupportsChains}
        statuses = [
            status
            for status in JobStatus
            if status not in optional or isinstance(store, optional[status])
        ]
        by_status: dict[JobStatus, str] = {}
        for status in statuses:  # PENDING first: the WAITING job depends on it
            if status is JobStatus.WAITING:
                waiting = self.ended(store, status, depends_on=by_status[JobStatus.PENDING])
                by_status[status] = waiting
            else:
                by_status[status] = self.ended(store, status)
        every = newest_first(store, by_status.values())
        assert listed(queries) == every, "no statuses: every job"
        for status, job_id in by_status.items():
            assert listed(queries, statuses=(status,)) == [job_id], f"statuses=({status},)"
        active = (JobStatus.PENDING, JobStatus.RUNNING)
        assert listed(queries, statuses=active) == newest_first(
            store, [by_status[s] for s in active]
        ), "statuses PENDING and RUNNING"
        ended = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED)
        assert listed(queries, statuses=ended) == newest_first(
            store, [by_status[s] for s in ended]
        ), "the three finished statuses"
        assert listed(queries, statuses=tuple(statuses)) == every, "every status named"

    @contract("job query", Level.CORE)
    def test_query_filters_by_exact_name_whole_tag_and_exact_keys(self, store: JobStore) -> None:
        """``name`` and ``business_key`` match exactly (``tck.q.a`` never matches
        ``tck.q.ab`` nor ``TCK.Q.A``), ``tag`` matches a whole stored tag (``x`` never
        ``xx``), ``idempotency_key`` the job enqueued with it; an unknown value lists
        nothing.

        On failure: compare with ``=`` (no LIKE, no case folding); a tag is a row of
        the tag table, not a substring of the tag list.
        """
        queries = query_store(store)
        named = self.spaced(store, name="tck.q.a", tags=("x",), business_key="order-1")
        longer = self.spaced(store, name="tck.q.ab", tags=("xx",), business_key="order-10")
        upper = self.spaced(store, name="TCK.Q.A", tags=("x", "y"), idempotency_key="pay-1")
        self.spaced(store, name="tck.q.b", idempotency_key="pay-10")
        assert listed(queries, name="tck.q.a") == [named], "name tck.q.a"
        assert listed(queries, name="tck.q.ab") == [longer], "name tck.q.ab"
        assert listed(queries, tag="x") == [upper, named], "tag x (not xx)"
        assert listed(queries, tag="y") == [upper], "a second tag of a job"
        assert listed(queries, business_key="order-1") == [named], "business key order-1"
        assert listed(queries, idempotency_key="pay-1") == [upper], "idempotency key pay-1"
        for filters in (
            {"name": "tck.q"},
            {"tag": "z"},
            {"business_key": "order"},
            {"idempotency_key": "pay"},
        ):
            assert listed(queries, **filters) == [], f"{filters} matched a job"

    @contract("job query", Level.CORE)
    def test_query_business_key_lists_finished_and_active_holders(self, store: JobStore) -> None:
        """A business key is reused once its holder finished: ``business_key`` lists every
        live job that carried it, finished or active, newest first.

        On failure: filter on the job's stored key, not on the active reservation.
        """
        queries = query_store(store)
        first = self.ended(store, JobStatus.FAILED, business_key="nightly")
        second = self.ended(store, JobStatus.PENDING, business_key="nightly")
        assert listed(queries, business_key="nightly") == [second, first]

    @contract("job query", Level.CORE)
    def test_query_created_range_is_from_inclusive_to_exclusive(self, store: JobStore) -> None:
        """``created_from`` keeps jobs created at or after it, ``created_to`` those created
        strictly before it.

        On failure: ``created_at >= created_from AND created_at < created_to``.
        """
        queries = query_store(store)
        first, middle, last = (self.spaced(store) for _ in range(3))
        at = self.get(store, middle).created_at
        assert self.get(store, first).created_at < at < self.get(store, last).created_at
        assert listed(queries, created_from=at) == [last, middle], "from: inclusive"
        assert listed(queries, created_to=at) == [first], "to: exclusive"
        assert listed(queries, created_from=at, created_to=at) == []
        assert listed(queries, created_from=self.get(store, first).created_at, created_to=at) == [
            first
        ]

    @contract("job query", Level.CORE)
    def test_query_ands_every_filter(self, store: JobStore) -> None:
        """Every filter given must hold: a job that differs from the target in any one of
        status, name, tag, business key or creation time is left out.

        On failure: one of the filters is ignored when another one drives the query
        (each must be checked whichever index reads the rows).
        """
        queries = query_store(store)
        target: dict[str, Any] = {"name": "tck.q.target", "tags": ("t",), "business_key": "k"}
        early = self.ended(store, JobStatus.FAILED, **target)
        self.sleep_past(_APART)
        since = self.get(store, early).created_at + timedelta(milliseconds=1)
        wanted = self.ended(store, JobStatus.FAILED, **target)
        self.ended(store, JobStatus.FAILED, **{**target, "name": "tck.q.other"})
        self.ended(store, JobStatus.FAILED, **{**target, "tags": ("u",)})
        self.ended(store, JobStatus.FAILED, **{**target, "business_key": "other"})
        self.ended(store, JobStatus.PENDING, **target)  # last: it holds the key
        everything = {
            "statuses": (JobStatus.FAILED,),
            "name": "tck.q.target",
            "tag": "t",
            "business_key": "k",
            "created_from": since,
        }
        assert listed(queries, **everything) == [wanted], "every filter at once"
        for dropped in everything:
            rest = {k: v for k, v in everything.items() if k != dropped}
            got = listed(queries, **rest)
            assert wanted in got and len(got) == 2, f"without {dropped}: {got}"

    @contract("job query", Level.CORE)
    def test_query_limit_must_be_1_to_1000(self, store: JobStore) -> None:
        """``limit`` 1 and 1000 are accepted; 0, -1 and 1001 raise ``ValueError`` naming
        the value; a page never holds more than ``limit`` jobs.

        On failure: check the limit before reading (never clamp it silently).
        """
        queries = query_store(store)
        self.tied(store, 3)
        assert len(queries.query_jobs(JobQuery(limit=1)).jobs) == 1
        assert len(queries.query_jobs(JobQuery(limit=1000)).jobs) == 3
        for bad in (0, -1, 1001):
            with pytest.raises(ValueError, match=str(bad)):
                queries.query_jobs(JobQuery(limit=bad))

    # -- pagination ----------------------------------------------------------------------

    @contract("job query", Level.CORE)
    def test_query_pages_cover_every_job_once_across_ties(self, store: JobStore) -> None:
        """Following ``next`` lists every job exactly once, in order, pages cutting
        through jobs that share a ``created_at``; every page but the last is full, the
        last one short with ``next=None``.

        On failure: continue strictly after the cursor's (``created_at``, id): jobs of the
        cursor's time with a smaller id come next, its own id and larger ones never again.
        """
        queries = query_store(store)
        ids = [*self.tied(store, 5), self.spaced(store), *self.tied(store, 5), *self.tied(store, 4)]
        expected = newest_first(store, ids)
        pages = walk(queries, JobQuery(limit=4))
        got = [job.id for page in pages for job in page.jobs]
        assert got == expected, f"paged\n{got}\nexpected\n{expected}"
        assert [len(page.jobs) for page in pages] == [4, 4, 4, 3]
        assert pages[-1].next is None

    @contract("job query", Level.CORE)
    def test_query_short_page_has_no_cursor_and_a_full_one_has_its_last_job(
        self, store: JobStore
    ) -> None:
        """A full page's ``next`` is the (``created_at``, id) of its last job; a short page
        has ``next=None``. When the jobs fill the pages exactly, the page after the last
        full one is empty, again with ``next=None``.

        On failure: hand out a cursor only when the page holds ``limit`` jobs.
        """
        queries = query_store(store)
        ids = newest_first(store, self.tied(store, 3) + self.tied(store, 3))
        first = queries.query_jobs(JobQuery(limit=3))
        last = first.jobs[-1]
        assert first.next is not None, "a full page has a next cursor"
        assert (first.next.created_at, first.next.id) == (last.created_at, last.id)
        second = queries.query_jobs(JobQuery(limit=3, after=first.next))
        assert [j.id for j in first.jobs + second.jobs] == ids
        assert second.next is not None, "the second page is full too"
        empty = queries.query_jobs(JobQuery(limit=3, after=second.next))
        assert empty.jobs == () and empty.next is None
        short = queries.query_jobs(JobQuery(limit=4, after=first.next))
        assert len(short.jobs) == 3 and short.next is None, "a short page has no cursor"

    @contract("job query", Level.CORE)
    def test_query_pages_stay_stable_while_new_jobs_arrive(self, store: JobStore) -> None:
        """Jobs enqueued while a listing is paged through never appear in its later pages
        and never shift them: the pages still hold exactly the jobs that were there,
        in order.

        On failure: page by the cursor (keyset), never by an offset.
        """
        queries = query_store(store)
        expected = newest_first(store, [self.spaced(store) for _ in range(3)] + self.tied(store, 6))
        first = queries.query_jobs(JobQuery(limit=4))
        arrived = [*self.tied(store, 3), self.spaced(store)]
        rest = walk(queries, JobQuery(limit=4, after=first.next))
        got = [job.id for page in [first, *rest] for job in page.jobs]
        assert got == expected, f"paged\n{got}\nexpected\n{expected}"
        assert not set(arrived) & set(got)

    @contract("job query", Level.CORE)
    def test_query_pages_of_a_filter_continue_within_it(self, store: JobStore) -> None:
        """A filtered listing pages like an unfiltered one: ``after`` with ``statuses``
        (several) or ``name`` continues within the filtered jobs, each once.

        On failure: apply the cursor in every driving statement (the per-status branches
        included), not only in the unfiltered one.
        """
        queries = query_store(store)
        pending = self.tied(store, 3, name="tck.q.paged")
        failed = [self.ended(store, JobStatus.FAILED, name="tck.q.paged") for _ in range(3)]
        others = self.tied(store, 3, name="tck.q.other")
        self.ended(store, JobStatus.SUCCEEDED, name="tck.q.paged")
        for filters, wanted in (
            (
                {"statuses": (JobStatus.PENDING, JobStatus.FAILED)},
                newest_first(store, pending + failed + others),
            ),
            (
                {"name": "tck.q.paged", "statuses": (JobStatus.PENDING, JobStatus.FAILED)},
                newest_first(store, pending + failed),
            ),
            ({"name": "tck.q.other"}, newest_first(store, others)),
        ):
            pages = walk(queries, JobQuery(limit=2, **filters))
            got = [job.id for page in pages for job in page.jobs]
            assert got == wanted, f"{filters}: paged\n{got}\nexpected\n{wanted}"

    # -- dead letters --------------------------------------------------------------------

    @contract("job query", Level.CORE)
    def test_query_groups_dead_letters_by_name_and_error_type(self, store: JobStore) -> None:
        """FAILED jobs are grouped by (name, the first line of ``last_error`` up to its
        first ``':'``), largest count first, then name, then error type; each group's
        ``latest_failed_at`` is its latest ``finished_at``. Other statuses never count;
        ``limit`` keeps the first groups (0: none).

        On failure: group only FAILED jobs; take the error type from the first line only
        (a traceback's later lines have colons too); a line without ``':'`` is the whole
        type, and no error text is ``""``.
        """
        queries = query_store(store)
        trace = "ValueError: boom\n\nTraceback (most recent call last):\n  File 'x.py': line 1"
        failed: dict[tuple[str, str], list[str]] = {}
        for name, error, key in (
            ("tck.q.a", trace, "ValueError"),
            ("tck.q.a", "ValueError: other text", "ValueError"),
            ("tck.q.a", "KeyError: 'k'", "KeyError"),
            ("tck.q.b", "ValueError: boom", "ValueError"),
            ("tck.q.b", "ValueError: boom", "ValueError"),
            ("tck.q.b", "no colon on this line\nsecond: line", "no colon on this line"),
            ("tck.q.c", "", ""),
            ("tck.q.a", trace, "ValueError"),
        ):
            job_id = self.ended(store, JobStatus.FAILED, error=error, name=name)
            failed.setdefault((name, key), []).append(job_id)
        self.ended(store, JobStatus.SUCCEEDED, name="tck.q.a")
        self.ended(store, JobStatus.PENDING, name="tck.q.a")
        self.ended(store, JobStatus.CANCELED, name="tck.q.c")
        expected = [
            DeadLetterGroup(
                name=name,
                error_type=error_type,
                count=len(ids),
                latest_failed_at=max(self.finished_at(store, job_id) for job_id in ids),
            )
            for (name, error_type), ids in sorted(
                failed.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][1])
            )
        ]
        got = queries.dead_letter_groups(limit=100)
        assert got == expected, f"grouped\n{got}\nexpected\n{expected}"
        assert queries.dead_letter_groups(limit=2) == expected[:2]
        assert queries.dead_letter_groups(limit=0) == []

    def finished_at(self, store: JobStore, job_id: str) -> datetime:
        finished = self.get(store, job_id).finished_at
        assert finished is not None, f"FAILED job {job_id} has no finished_at"
        return finished

    # -- execution counts ----------------------------------------------------------------

    @contract("job query", Level.CORE)
    def test_query_counts_finished_executions_per_aligned_bucket(self, store: JobStore) -> None:
        """Each closed execution record counts once, in the bucket its ``finished_at``
        falls in (buckets start at multiples of ``bucket_seconds`` since the epoch, UTC,
        in time order, empty ones omitted): SUCCEEDED as succeeded, FAILED (a retried
        attempt too) as failed, RELEASED as other; records still RUNNING never count.

        On failure: count the records by ``finished_at`` (not ``started_at``), and round
        it down to the bucket size from the epoch.
        """
        queries = query_store(store)
        ids = self.executions_of_every_kind(store)
        records = [e for job_id in ids for e in store.list_executions(job_id)]
        since = self.past(store, _AN_HOUR)
        for bucket in (60, 86_400):
            expected: dict[datetime, Counter[str]] = {}
            for record in records:
                if record.finished_at is None:
                    continue
                seconds = int(record.finished_at.timestamp()) // bucket * bucket
                start = datetime.fromtimestamp(seconds, tz=UTC)
                expected.setdefault(start, Counter())[_kind(record.status)] += 1
            wanted = [
                ExecutionBucket(
                    start=start,
                    succeeded=tally["succeeded"],
                    failed=tally["failed"],
                    other=tally["other"],
                )
                for start, tally in sorted(expected.items())
            ]
            got = queries.execution_counts(since=since, bucket_seconds=bucket)
            assert got == wanted, f"buckets of {bucket} s:\n{got}\nexpected\n{wanted}"
            totals = (sum(b.succeeded for b in got), sum(b.failed for b in got))
            assert totals == (1, 2) and sum(b.other for b in got) == 1, "1 / 2 / 1 records"

    @contract("job query", Level.CORE)
    def test_query_execution_counts_start_at_since_inclusive(self, store: JobStore) -> None:
        """Only records finished at or after ``since`` count (one finished exactly at
        ``since`` does); a ``since`` after every record gives ``[]``; ``bucket_seconds``
        outside 60..86400 raises ``ValueError`` naming it.

        On failure: ``finished_at >= since``; check the bucket size first.
        """
        queries = query_store(store)
        early = self.ended(store, JobStatus.SUCCEEDED)
        late = self.ended(store, JobStatus.FAILED)
        [early_record] = store.list_executions(early)
        [late_record] = store.list_executions(late)
        assert early_record.finished_at is not None and late_record.finished_at is not None
        assert early_record.finished_at < late_record.finished_at
        got = queries.execution_counts(since=late_record.finished_at, bucket_seconds=86_400)
        assert [(b.succeeded, b.failed, b.other) for b in got] == [(0, 1, 0)], got
        later = store.database_time() + timedelta(minutes=1)
        assert queries.execution_counts(since=later, bucket_seconds=60) == []
        for bad in (59, 0, 86_401):
            with pytest.raises(ValueError, match=str(bad)):
                queries.execution_counts(since=later, bucket_seconds=bad)

    def executions_of_every_kind(self, store: JobStore) -> list[str]:
        """Jobs whose records are: one SUCCEEDED, one FAILED and retried, one FAILED and
        dead-lettered, one still RUNNING, one RELEASED (last: a released job is due again
        and would be the next claimed)."""
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        retried = self.running(store)
        assert store.schedule_retry(
            retried.id, retried.claim_seq, error="ValueError: again", delay_seconds=_AN_HOUR
        )
        dead = self.running(store)
        assert store.fail_job(dead.id, dead.claim_seq, error="ValueError: dead")
        still = self.running(store)
        released = self.running(store)
        assert store.release_claim(released.id, released.claim_seq, message="drained")
        return [done.id, retried.id, dead.id, still.id, released.id]


def _kind(status: ExecutionStatus) -> str:
    if status is ExecutionStatus.SUCCEEDED:
        return "succeeded"
    if status is ExecutionStatus.FAILED:
        return "failed"
    return "other"

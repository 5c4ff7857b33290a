"""Job log lines and progress (``SupportsJobLogs``): kept per attempt, bounded, fenced.

N/A for stores without the capability: the engine then only writes job lines to the
Python logger, and ``app.job_logs`` / ``app.job_progress`` say the store keeps none.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

import pytest

from ratchet.spi import (
    JobLogLine,
    JobProgress,
    JobStore,
    SupportsJobLogs,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreFactory, StoreSuiteBase, run_concurrently

# Stored times may lose what lies below a microsecond (SQLite keeps epoch seconds as REAL).
_SLACK = timedelta(milliseconds=1)


def log_store(store: JobStore) -> SupportsJobLogs:
    if not isinstance(store, SupportsJobLogs):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsJobLogs")
    return store


def line(
    job_id: str,
    claim_seq: int,
    seq: int,
    at: datetime,
    *,
    attempt: int = 1,
    level: str = "INFO",
    message: str | None = None,
) -> JobLogLine:
    return JobLogLine(
        job_id=job_id,
        claim_seq=claim_seq,
        attempt=attempt,
        seq=seq,
        logged_at=at,
        level=level,
        message=f"line {seq} of claim {claim_seq}" if message is None else message,
    )


def kept(store: SupportsJobLogs, job_id: str) -> list[tuple[int, int]]:
    """``(claim_seq, seq)`` of every stored line of ``job_id``, in the order returned."""
    return [(stored.claim_seq, stored.seq) for stored in store.list_job_logs(job_id)]


class JobLogContracts(StoreSuiteBase):
    @contract("job logs", Level.CORE)
    def test_job_log_lines_round_trip_in_order(self, store: JobStore) -> None:
        """Lines appended in two batches come back ordered by ``seq``, every field as
        given: the time (to the millisecond, on the database clock as the engine computed
        it), the level and the text, Unicode and newlines included. An unknown job has no
        lines; an empty batch stores nothing.

        On failure: ``list_job_logs`` must order by ``claim_seq`` then ``seq`` and keep
        ``logged_at`` as given (not the time of the write).
        """
        logs = log_store(store)
        claimed = self.running(store)
        start = self.past(store, 120)
        text = "naïve café ✓\nTraceback (most recent call last):\n  ValueError: 'x'"
        first = [
            line(claimed.id, claimed.claim_seq, n, start + timedelta(seconds=n)) for n in (1, 2)
        ]
        second = [
            line(
                claimed.id,
                claimed.claim_seq,
                3,
                start + timedelta(seconds=3, microseconds=250_000),
                level="ERROR",
                message=text,
            )
        ]
        logs.append_job_logs(second, keep_per_attempt=100)
        logs.append_job_logs(first, keep_per_attempt=100)
        logs.append_job_logs([], keep_per_attempt=100)
        stored = logs.list_job_logs(claimed.id)
        assert [s.seq for s in stored] == [1, 2, 3]
        for got, sent in zip(stored, [*first, *second], strict=True):
            assert (got.job_id, got.claim_seq, got.attempt, got.level, got.message) == (
                sent.job_id,
                sent.claim_seq,
                sent.attempt,
                sent.level,
                sent.message,
            )
            assert got.logged_at.utcoffset() == timedelta(0)
            assert abs(got.logged_at - sent.logged_at) < _SLACK
        assert logs.list_job_logs("no-such-job") == []

    @contract("job logs", Level.CORE)
    def test_job_log_bound_keeps_the_newest_lines_per_attempt(self, store: JobStore) -> None:
        """With ``keep_per_attempt=3``, five lines sent as two batches leave lines 3, 4 and
        5 (the highest ``seq``), so a reader counts 2 dropped; another job's lines are not
        trimmed by this attempt's bound.

        On failure: the trim must run per ``(job_id, claim_seq)`` after the insert and
        delete ``seq <= max(seq) - keep`` of that attempt only.
        """
        logs = log_store(store)
        job = self.running(store)
        other = self.running(store)
        now = store.database_time()
        logs.append_job_logs(
            [line(other.id, other.claim_seq, n, now) for n in range(1, 5)], keep_per_attempt=10
        )
        logs.append_job_logs(
            [line(job.id, job.claim_seq, n, now) for n in (1, 2)], keep_per_attempt=3
        )
        logs.append_job_logs(
            [line(job.id, job.claim_seq, n, now) for n in (3, 4, 5)], keep_per_attempt=3
        )
        assert kept(logs, job.id) == [(job.claim_seq, 3), (job.claim_seq, 4), (job.claim_seq, 5)]
        assert len(kept(logs, other.id)) == 4
        with pytest.raises(ValueError, match="keep_per_attempt"):
            logs.append_job_logs([line(job.id, job.claim_seq, 6, now)], keep_per_attempt=0)

    @contract("job logs", Level.CORE)
    def test_lines_of_two_attempts_are_kept_apart(self, store: JobStore) -> None:
        """Lines of the first claim (released, the job claimed again) and of the second
        are kept under their own ``claim_seq`` and attempt, ordered first claim first;
        the second attempt's bound never trims the first's lines, even when the first
        claim's (stale) worker writes after the takeover.

        On failure: the key of a line must include ``claim_seq``, and the trim must be
        per attempt.
        """
        logs = log_store(store)
        first = self.running(store)
        now = store.database_time()
        logs.append_job_logs(
            [line(first.id, first.claim_seq, n, now) for n in (1, 2)], keep_per_attempt=2
        )
        assert store.release_claim(first.id, first.claim_seq, message="drain")
        second = self.claim(store, first.id)
        assert second.claim_seq > first.claim_seq
        logs.append_job_logs(
            [line(second.id, second.claim_seq, n, now, attempt=2) for n in (1, 2, 3, 4)],
            keep_per_attempt=2,
        )
        # The stale worker of the first claim still flushes what it wrote.
        logs.append_job_logs([line(first.id, first.claim_seq, 3, now)], keep_per_attempt=2)
        assert kept(logs, first.id) == [
            (first.claim_seq, 2),
            (first.claim_seq, 3),
            (second.claim_seq, 3),
            (second.claim_seq, 4),
        ]
        attempts = {(s.claim_seq, s.attempt) for s in logs.list_job_logs(first.id)}
        assert attempts == {(first.claim_seq, 1), (second.claim_seq, 2)}

    @contract("job logs", Level.BEHAVIORAL)
    def test_a_batch_sent_again_duplicates_nothing(self, stores: StoreFactory) -> None:
        """The same batch appended twice (an answer lost, the engine sends it again), and
        from two store instances at once, stores each line once.

        On failure: a line already stored under ``(job_id, claim_seq, seq)`` must be
        skipped (a primary key and ``ON CONFLICT DO NOTHING`` or its dialect's twin).
        """
        store = stores()
        logs = log_store(store)
        job = self.running(store)
        now = store.database_time()
        batch = [line(job.id, job.claim_seq, n, now) for n in range(1, 6)]
        logs.append_job_logs(batch, keep_per_attempt=100)
        logs.append_job_logs(batch, keep_per_attempt=100)
        others = [log_store(stores()) for _ in range(2)]
        more = [line(job.id, job.claim_seq, n, now) for n in range(4, 9)]
        results = run_concurrently(
            [partial(other.append_job_logs, more, keep_per_attempt=100) for other in others]
        )
        assert all(r is None for r in results), results
        assert kept(logs, job.id) == [(job.claim_seq, n) for n in range(1, 9)]

    @contract("job progress", Level.CORE)
    def test_progress_round_trips_and_is_replaced(self, store: JobStore) -> None:
        """The current claim's progress is stored (``True``) and read back with its
        attempt, values, note and a database-clock ``updated_at``; a later report replaces
        it, ``total`` and ``note`` may be ``None``. A job that never reported has none.

        On failure: ``set_job_progress`` must upsert one record per job.
        """
        logs = log_store(store)
        job = self.running(store)
        assert logs.get_job_progress(job.id) is None
        before = store.database_time()
        assert logs.set_job_progress(
            job.id, job.claim_seq, attempt=job.attempt, done=3, total=10, note="rows 1-3 ✓"
        )
        first = logs.get_job_progress(job.id)
        assert isinstance(first, JobProgress)
        assert (first.job_id, first.claim_seq, first.attempt) == (job.id, job.claim_seq, 1)
        assert (first.done, first.total, first.note) == (3.0, 10.0, "rows 1-3 ✓")
        assert before - _SLACK <= first.updated_at <= store.database_time() + _SLACK
        assert logs.set_job_progress(
            job.id, job.claim_seq, attempt=job.attempt, done=7.5, total=None, note=None
        )
        second = logs.get_job_progress(job.id)
        assert second is not None
        assert (second.done, second.total, second.note) == (7.5, None, None)

    @contract("job progress", Level.CORE)
    def test_a_stale_claims_progress_is_refused(self, store: JobStore) -> None:
        """Progress from a claim that is no longer current (the job was released and
        claimed again), for a job that is not RUNNING, or for an unknown job returns
        ``False`` and changes nothing.

        On failure: the write must be fenced by the job row: ``status = 'RUNNING' AND
        claim_seq = :claim_seq``.
        """
        logs = log_store(store)
        first = self.running(store)
        assert logs.set_job_progress(
            first.id, first.claim_seq, attempt=1, done=1, total=4, note="first"
        )
        assert store.release_claim(first.id, first.claim_seq, message="drain")
        assert not logs.set_job_progress(
            first.id, first.claim_seq, attempt=1, done=2, total=4, note="pending"
        )
        second = self.claim(store, first.id)
        assert logs.set_job_progress(
            second.id, second.claim_seq, attempt=2, done=1, total=4, note="second"
        )
        assert not logs.set_job_progress(
            first.id, first.claim_seq, attempt=1, done=4, total=4, note="stale"
        )
        current = logs.get_job_progress(first.id)
        assert current is not None
        assert (current.claim_seq, current.note) == (second.claim_seq, "second")
        store.complete_job(second.id, second.claim_seq, result_json=None, result_type=None)
        assert not logs.set_job_progress(
            second.id, second.claim_seq, attempt=2, done=4, total=4, note="after the end"
        )
        assert not logs.set_job_progress("no-such-job", 1, attempt=1, done=1, total=None, note=None)
        assert logs.get_job_progress("no-such-job") is None

    @contract("job progress", Level.ADVANCED)
    def test_a_stale_claim_racing_its_successor_never_wins(self, stores: StoreFactory) -> None:
        """A stale claim and the current one report progress at once, from two store
        instances, many times: every stale report is refused and the stored progress is
        the current claim's.

        On failure: the fence must be read in the same statement as the write.
        """
        store, other = stores(), stores()
        logs, other_logs = log_store(store), log_store(other)
        first = self.running(store)
        assert store.release_claim(first.id, first.claim_seq, message="drain")
        second = self.claim(store, first.id)

        def stale() -> list[bool]:
            return [
                other_logs.set_job_progress(
                    first.id, first.claim_seq, attempt=1, done=n, total=None, note="stale"
                )
                for n in range(20)
            ]

        def current() -> list[bool]:
            return [
                logs.set_job_progress(
                    second.id, second.claim_seq, attempt=2, done=n, total=None, note="current"
                )
                for n in range(20)
            ]

        stale_results, current_results = run_concurrently([stale, current])
        assert stale_results == [False] * 20
        assert current_results == [True] * 20
        final = logs.get_job_progress(first.id)
        assert final is not None
        assert (final.claim_seq, final.note, final.done) == (second.claim_seq, "current", 19.0)

    @contract("job logs", Level.BEHAVIORAL)
    def test_purge_removes_only_old_lines_and_progress(self, store: JobStore) -> None:
        """``purge_job_logs`` deletes lines logged before database-now minus the age (at
        most ``batch_size`` records per call), then old progress records; newer lines and
        progress stay.

        On failure: the cut-off must compare ``logged_at`` (and the progress's
        ``updated_at``) with the database clock, and the batch bound the sum of both.
        """
        logs = log_store(store)
        job = self.running(store)
        now = store.database_time()
        old = [line(job.id, job.claim_seq, n, now - timedelta(hours=2)) for n in (1, 2, 3)]
        new = [line(job.id, job.claim_seq, n, now) for n in (4, 5)]
        logs.append_job_logs([*old, *new], keep_per_attempt=100)
        assert logs.set_job_progress(
            job.id, job.claim_seq, attempt=1, done=1, total=None, note=None
        )
        assert logs.purge_job_logs(older_than_seconds=7200 + 3600, batch_size=10) == 0
        assert logs.purge_job_logs(older_than_seconds=3600, batch_size=2) == 2
        assert logs.purge_job_logs(older_than_seconds=3600, batch_size=10) == 1
        assert logs.purge_job_logs(older_than_seconds=3600, batch_size=10) == 0
        assert kept(logs, job.id) == [(job.claim_seq, 4), (job.claim_seq, 5)]
        assert logs.get_job_progress(job.id) is not None
        assert logs.purge_job_logs(older_than_seconds=3600, batch_size=0) == 0
        self.sleep_past(0.05)
        assert logs.purge_job_logs(older_than_seconds=0.01, batch_size=2) == 2
        assert logs.purge_job_logs(older_than_seconds=0.01, batch_size=2) == 1
        assert kept(logs, job.id) == []
        assert logs.get_job_progress(job.id) is None

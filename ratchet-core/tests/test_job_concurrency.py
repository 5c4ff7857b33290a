"""``@app.job(concurrency=N)``: at most N attempts of one job at once per worker (issue
#19, "Per-job concurrency and cancellation").

When one of these fails, look at ``ratchet._engine.job_limits`` (the count and the
deferral's reason) and ``JobRunner.run_sync`` / ``run_async`` (checked before the body
starts; over the limit, the claim is snoozed uncharged). Overlaps are measured by the
bodies themselves, not by Ratchet's bookkeeping. Waits are failure bounds only.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from ratchet import ExecutionStatus, JobStatus, Ratchet
from ratchet._engine.job_limits import JobConcurrency
from ratchet._engine.worker import WorkerStats
from ratchet.errors import ValueOutOfRangeError

BOUND = 60.0


class Overlap:
    """How many bodies run at once, at most (measured by the bodies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.finished: list[str] = []

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self, name: str) -> None:
        with self._lock:
            self.now -= 1
            self.finished.append(name)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Ratchet]:
    application = Ratchet(f"sqlite:///{tmp_path / 'ratchet.db'}", **FAST)
    yield application
    application.close()


def register_slow(app: Ratchet, overlap: Overlap, *, name: str, **options: Any) -> None:
    def body() -> None:
        overlap.enter()
        time.sleep(0.15)
        overlap.leave(name)

    app.job(name=name, max_retries=0, **options)(body)


def run_all(app: Ratchet, ids: list[str], *, concurrency: int) -> WorkerStats:
    with app.worker(concurrency=concurrency) as worker:
        for job_id in ids:
            assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED
    return worker.stats


@pytest.mark.parametrize("limit", [1, 2])
def test_no_more_than_the_limit_run_at_once_and_deferrals_cost_no_attempt(
    app: Ratchet, limit: int
) -> None:
    """Six jobs, a worker with four slots, the job limited to ``limit``: never more than
    ``limit`` bodies at once (and ``limit`` is reached), every job succeeds on its first
    attempt, and the deferrals are RELEASED execution records naming the limit."""
    overlap = Overlap()
    register_slow(app, overlap, name="limited", concurrency=limit)
    ids = [app.enqueue("limited") for _ in range(6)]
    stats = run_all(app, ids, concurrency=4)
    assert overlap.most == limit
    deferred = 0
    for job_id in ids:
        job = app.get_job(job_id)
        assert job is not None and job.attempts == 1, job
        records = app.executions(job_id)
        assert [r.status for r in records][-1] is ExecutionStatus.SUCCEEDED
        for record in records[:-1]:
            assert record.status is ExecutionStatus.RELEASED
            assert f"concurrency={limit}" in (record.message or "")
            deferred += 1
    assert deferred > 0, "no job was ever deferred: the scenario did not test the limit"
    assert (stats.snoozed, stats.succeeded, stats.retried) == (deferred, 6, 0)


def test_negative_control_without_a_limit_the_same_jobs_overlap(app: Ratchet) -> None:
    """The same six jobs with no limit run several at once: the bound above is the
    limit's doing, not the scenario's."""
    overlap = Overlap()
    register_slow(app, overlap, name="unlimited")
    ids = [app.enqueue("unlimited") for _ in range(6)]
    run_all(app, ids, concurrency=4)
    assert overlap.most > 1


def test_other_jobs_run_while_one_job_is_at_its_limit(app: Ratchet) -> None:
    """While the limited job holds its one place with a long attempt, the worker's other
    slot keeps running other jobs: the limit costs the others nothing."""
    release = threading.Event()
    began = threading.Event()

    def long() -> None:
        began.set()
        assert release.wait(BOUND)

    app.job(name="long", concurrency=1)(long)
    app.job(name="quick")(lambda: None)
    first = app.enqueue("long")
    with app.worker(concurrency=2):
        assert began.wait(BOUND)
        second = app.enqueue("long")
        quick = [app.enqueue("quick") for _ in range(5)]
        for job_id in quick:
            assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED
        assert app.get_job(second).status is not JobStatus.SUCCEEDED  # type: ignore[union-attr]
        release.set()
        for job_id in (first, second):
            assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED


def test_async_jobs_keep_their_limit_too(app: Ratchet) -> None:
    overlap = Overlap()

    async def body() -> None:
        overlap.enter()
        await asyncio.sleep(0.1)
        overlap.leave("async")

    app.job(name="async-limited", concurrency=1, max_retries=0)(body)
    ids = [app.enqueue("async-limited") for _ in range(4)]
    run_all(app, ids, concurrency=4)
    assert overlap.most == 1 and len(overlap.finished) == 4


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "2", 10_001])
def test_a_bad_limit_is_refused_where_the_job_is_declared(app: Ratchet, bad: Any) -> None:
    with pytest.raises(ValueOutOfRangeError, match="concurrency is .* from 1 to 10000"):
        app.job(name="bad", concurrency=bad)(lambda: None)
    assert "bad" not in app.registry


def test_the_count_is_per_name_and_released_exactly() -> None:
    counts = JobConcurrency()
    assert counts.try_enter("a", 2) and counts.try_enter("a", 2)
    assert not counts.try_enter("a", 2)
    assert counts.try_enter("b", 1)  # another job has its own count
    counts.leave("a")
    assert counts.running("a") == 1 and counts.try_enter("a", 2)
    for _ in range(2):
        counts.leave("a")
    assert counts.running("a") == 0

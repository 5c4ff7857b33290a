"""Claiming short jobs ahead of free slots: bounded by time, released at drain."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from ratchet import Ratchet
from ratchet._engine.executor import JobExecutor
from ratchet._engine.prefetch import ReadyQueue
from ratchet._types import ClaimedJob
from ratchet.spi import DRAIN_RELEASED_MESSAGE, JobStatus


def test_nothing_is_claimed_ahead_before_a_job_was_timed() -> None:
    ready = ReadyQueue(concurrency=10, prefetch_seconds=0.1, max_ahead=50)
    assert ready.ahead_allowance() == 0


def test_the_allowance_is_about_prefetch_seconds_of_work() -> None:
    ready = ReadyQueue(concurrency=4, prefetch_seconds=0.1, max_ahead=50)
    ready.observe(0.02)  # 4 slots x 0.1 s / 0.02 s per job
    assert ready.ahead_allowance() == 20
    ready.observe(0.0001)
    assert 0 < ready.ahead_allowance() <= 50  # capped at the claim batch size


def test_slow_jobs_are_never_claimed_ahead() -> None:
    ready = ReadyQueue(concurrency=8, prefetch_seconds=0.1, max_ahead=50)
    ready.observe(2.0)
    assert ready.ahead_allowance() == 0
    off = ReadyQueue(concurrency=8, prefetch_seconds=0, max_ahead=50)
    off.observe(0.001)
    assert off.ahead_allowance() == 0


def _app(tmp_path: Any, **options: Any) -> Ratchet:
    app = Ratchet(f"sqlite:///{tmp_path / 'prefetch.db'}", coordinator="none", **options)

    @app.job(name="quick")
    def quick(n: int) -> int:
        time.sleep(0.005)
        return n

    return app


def test_short_jobs_are_claimed_ahead_and_a_drain_releases_them_unstarted(tmp_path: Any) -> None:
    app = _app(tmp_path, concurrency=2, prefetch_seconds=1.0, poll_burst_seconds=0.05)
    ids = app.enqueue_many("quick", [(n,) for n in range(400)])
    worker = app.worker().start()
    most_waiting = 0
    deadline = time.monotonic() + 30
    while worker.stats.succeeded < 60 and time.monotonic() < deadline:
        most_waiting = max(most_waiting, len(worker.ready))
        time.sleep(0.002)
    worker.stop(timeout=10)
    assert most_waiting > 2, "short jobs should have been claimed ahead of the 2 slots"
    jobs = [app.get_job(job_id) for job_id in ids]
    statuses = {job.status for job in jobs if job is not None}
    assert statuses <= {JobStatus.SUCCEEDED, JobStatus.PENDING}  # nothing left RUNNING
    released = [
        job
        for job in jobs
        if job is not None and job.status is JobStatus.PENDING and job.claim_seq > 0
    ]
    assert released, "the claimed-ahead jobs should have been given back"
    for job in released:
        [execution] = app.executions(job.id)
        assert execution.message == DRAIN_RELEASED_MESSAGE
        assert (job.attempts, job.crash_count) == (0, 0)  # released with no charge


def test_prefetch_off_claims_only_free_slots(tmp_path: Any) -> None:
    app = _app(tmp_path, concurrency=2, prefetch_seconds=0, poll_burst_seconds=0.05)
    app.enqueue_many("quick", [(n,) for n in range(60)])
    worker = app.worker().start()
    deadline = time.monotonic() + 30
    while worker.stats.succeeded < 20 and time.monotonic() < deadline:
        assert len(worker.ready) + len(worker.executor.in_flight()) <= 2
        time.sleep(0.002)
    worker.stop(timeout=10)


def test_a_job_that_finishes_inside_its_start_call_does_not_stall_the_worker(
    tmp_path: Any,
) -> None:
    """A job can finish before the call that started it returns; its slot-freed path then
    runs in the starting thread and starts the next claimed-ahead job. A lock held across
    the start once deadlocked the poller here (seen in a benchmark drain)."""
    app = _app(tmp_path, concurrency=2, prefetch_seconds=1.0)
    ids = app.enqueue_many("quick", [(n,) for n in range(20)])
    worker = app.worker().start(poll=False)
    worker.ready.observe(0.0001)  # as if short jobs had run: claim ahead

    def run_inline(fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        future.set_result(fn(*args))
        return future

    worker.executor._pool.submit = run_inline  # type: ignore[method-assign]
    claiming = threading.Thread(target=worker.claim_once, daemon=True)
    claiming.start()
    claiming.join(20)
    assert not claiming.is_alive(), "the claiming thread deadlocked"
    assert worker.flush_outcomes(10)
    worker.stop(timeout=5)
    assert {app.get_job(i).status for i in ids} == {JobStatus.SUCCEEDED}  # type: ignore[union-attr]


def _claim_while_a_waiting_job_takes_the_slot(tmp_path: Any) -> list[tuple[bool, bool]]:
    """One slot, free. While the worker's claim is in flight, a job claimed ahead earlier
    is started by another thread (as a finishing job thread does from the ready queue).
    Returns, for each job the claim returned, (its start was recorded, it is running)."""
    app = _app(tmp_path, concurrency=1, prefetch_seconds=1.0)
    release = threading.Event()

    @app.job(name="hold")
    def hold() -> None:
        release.wait(10)

    app.enqueue("hold")
    app.enqueue_many("quick", [(n,) for n in range(5)])
    worker = app.worker().start(poll=False)
    worker.ready.observe(0.0001)  # as if short jobs had run: claim ahead
    [waiting] = worker.store.claim_due_jobs(
        node_id=worker.node_id, limit=1, priority_boost_seconds=0, start_now=0
    )
    claim = worker.store.claim_due_jobs

    def claim_racing_a_job_thread(**kwargs: Any) -> Any:
        if not worker.executor.try_submit(waiting):
            worker.ready.push_front(waiting)  # what _start_ready does when refused
        return claim(**kwargs)

    worker.store.claim_due_jobs = claim_racing_a_job_thread  # type: ignore[method-assign]
    try:
        jobs = worker.claim_once()
        running = {(job.id, job.claim_seq) for job in worker.executor.in_flight()}
        return [(job.start_recorded, (job.id, job.claim_seq) in running) for job in jobs]
    finally:
        release.set()
        worker.stop(timeout=10)


def test_a_claim_holds_the_slots_of_the_jobs_whose_start_it_records(tmp_path: Any) -> None:
    """A job whose start the claim records (crash recovery charges it) runs at once: the
    claim held its slot, so a job started meanwhile by another thread cannot take it and
    leave the recorded job waiting, charged for whatever crashes the node in its place."""
    claimed = _claim_while_a_waiting_job_takes_the_slot(tmp_path)
    assert claimed[0] == (True, True), claimed
    assert all(recorded == running for recorded, running in claimed), claimed


def test_negative_control_slots_not_held_during_the_claim(tmp_path: Any, monkeypatch: Any) -> None:
    """Counting the free slots without holding them (as before this guard): the job
    started meanwhile takes the slot and a job with a recorded start waits."""

    def count_without_holding(self: JobExecutor, *, leave: int) -> int:
        return max(0, self.free_slots() - leave)

    def nothing_to_give_back(self: JobExecutor, count: int) -> None:
        pass

    def submit_unheld(self: JobExecutor, job: ClaimedJob) -> None:
        self.try_submit(job)  # refused when the slot was taken: the job waits unstarted

    monkeypatch.setattr(JobExecutor, "reserve", count_without_holding)
    monkeypatch.setattr(JobExecutor, "unreserve", nothing_to_give_back)
    monkeypatch.setattr(JobExecutor, "submit_reserved", submit_unheld)
    claimed = _claim_while_a_waiting_job_takes_the_slot(tmp_path)
    assert (True, False) in claimed, claimed

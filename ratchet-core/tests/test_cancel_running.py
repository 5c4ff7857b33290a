"""``app.cancel_job`` on a RUNNING job (issue #19, "Per-job concurrency and cancellation").

When one of these fails, look at ``ratchet._app.Ratchet.cancel_job`` (the fenced store
write, read again when the claim moved on), ``ratchet._engine.cancels`` (how the cancel
reaches the body: this process's workers at once, others by their check of the store),
``ratchet._engine.outcomes.OutcomeRecorder._stale`` (the stopped body's outcome is
discarded) and the stores' ``cancel_running_job`` / ``canceled_among`` (the kit's
``RunningCancelContracts`` check the stores themselves). The multi-process scenarios are
in ``test_cluster.py``. Waits are failure bounds only; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, Events
from ratchet import ExecutionStatus, JobStatus, Ratchet, current_job
from ratchet._context import JobContext
from ratchet._engine.cancels import CANCELED_WHILE_RUNNING, CancelWatch, RunningAttempts
from ratchet._engine.prefetch import ReadyQueue
from ratchet.events import Event, JobCanceled, OutcomeRejected
from ratchet.spi import SupportsRunningCancel
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet_tck.loopback import LoopbackHarness
from ratchet_tck.store import new_job

BOUND = 30.0  # failure bound for every wait: reached only when the behaviour is broken
SLOW_POLL = {**FAST, "poll_burst_seconds": 30.0}  # the store check never comes in time


class NoRunningCancelStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    cancel_running_job = None  # type: ignore[assignment]  # hides the capability


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "ratchet.db")


def make_app(db: str, **options: Any) -> Ratchet:
    store = SQLiteJobStore(db)
    assert isinstance(store, SupportsRunningCancel)
    return Ratchet(store, **{**FAST, **options})


class Stoppable:
    """Job bodies that signal when they begin and note how they ended."""

    def __init__(self) -> None:
        self.began = threading.Event()
        self.stopped = threading.Event()
        self.release = threading.Event()  # lets the sync body end without a cancel
        self.runs = 0

    def sync_body(self) -> str:
        self.runs += 1
        self.began.set()
        deadline = time.monotonic() + BOUND
        while not current_job().cancel_requested:
            assert time.monotonic() < deadline, "never asked to stop"
            if self.release.wait(0.005):
                return "released"
        self.stopped.set()
        return "stopped"

    async def async_body(self) -> str:
        self.runs += 1
        self.began.set()
        try:
            await asyncio.sleep(BOUND)
        except asyncio.CancelledError:
            self.stopped.set()
            raise
        return "never stopped"


def register(app: Ratchet, stoppable: Stoppable, *, is_async: bool) -> None:
    body = stoppable.async_body if is_async else stoppable.sync_body
    app.job(name="stoppable", max_retries=3)(body)
    app.job(name="after")(lambda: "ran")


@pytest.fixture
def app(db: str) -> Iterator[Ratchet]:
    application = make_app(db, **SLOW_POLL)
    yield application
    application.close()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_cancel_in_the_workers_process_stops_the_body_at_once(
    app: Ratchet, is_async: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """With the worker's store check 30 s away, only the in-process path can stop the
    body in time. The job stays CANCELED with its attempts unused, the execution record
    says it was canceled, the body's own outcome is discarded and logged as a cancel (not
    as a lost claim), and the worker goes on to the next job."""
    stoppable = Stoppable()
    register(app, stoppable, is_async=is_async)
    events = Events()
    app.on(Event, events)
    job_id = app.enqueue("stoppable")
    with caplog.at_level(logging.INFO, logger="ratchet"), app.worker(concurrency=2):
        assert stoppable.began.wait(BOUND)
        assert app.cancel_job(job_id)
        assert stoppable.stopped.wait(5), "the cancel did not reach the body"
        after = app.enqueue("after")
        assert app.wait_for(after, timeout=BOUND).status is JobStatus.SUCCEEDED
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.result, job.owner) == (JobStatus.CANCELED, 0, None, None)
    [execution] = app.store.list_executions(job_id)
    assert (execution.status, execution.message) == (ExecutionStatus.FAILED, CANCELED_WHILE_RUNNING)
    assert stoppable.runs == 1
    assert [e.job_id for e in events.of(JobCanceled)] == [job_id]
    assert [e.job_id for e in events.of(OutcomeRejected)] == [job_id]
    messages = [r.getMessage() for r in caplog.records]
    assert any("was canceled while it ran" in m for m in messages), messages
    assert not any("no longer current" in m for m in messages), messages


def test_negative_control_a_cancel_from_another_process_waits_for_the_check(
    app: Ratchet, db: str
) -> None:
    """The same cancel from another application (as another process would) does not
    reach the body before the worker's store check: the stop above is the in-process
    path's doing."""
    stoppable = Stoppable()
    register(app, stoppable, is_async=False)
    other = make_app(db)
    job_id = app.enqueue("stoppable")
    try:
        with app.worker(concurrency=1) as worker:
            assert stoppable.began.wait(BOUND)
            assert other.cancel_job(job_id)
            assert not stoppable.stopped.wait(1.0), "stopped without the in-process path"
            assert worker.cancels.check() == [job_id]  # the check finds it ...
            assert stoppable.stopped.wait(5)  # ... and stops it
    finally:
        other.close()


def test_the_workers_check_finds_a_cancel_made_elsewhere(db: str) -> None:
    """With the usual poll interval, a cancel from another application reaches the body
    through the worker's own check of the store."""
    worker_app = make_app(db)
    other = make_app(db)
    stoppable = Stoppable()
    register(worker_app, stoppable, is_async=False)
    try:
        job_id = worker_app.enqueue("stoppable")
        with worker_app.worker(concurrency=1):
            assert stoppable.began.wait(BOUND)
            assert other.cancel_job(job_id)
            assert stoppable.stopped.wait(BOUND)
        assert worker_app.get_job(job_id).status is JobStatus.CANCELED  # type: ignore[union-attr]
    finally:
        worker_app.close()
        other.close()


def test_a_body_that_raises_after_its_cancel_is_not_retried(app: Ratchet) -> None:
    began, stopped = threading.Event(), threading.Event()

    def raises_when_stopped() -> None:
        began.set()
        while not current_job().cancel_requested:
            time.sleep(0.005)
        stopped.set()
        raise RuntimeError("interrupted")

    app.job(name="raiser", max_retries=5)(raises_when_stopped)
    job_id = app.enqueue("raiser")
    with app.worker(concurrency=1):
        assert began.wait(BOUND)
        assert app.cancel_job(job_id)
        assert stopped.wait(5)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.last_error) == (JobStatus.CANCELED, 0, None), job
    assert len(app.store.list_executions(job_id)) == 1


def test_cancel_answers_false_for_finished_and_unknown_jobs(app: Ratchet) -> None:
    app.job(name="after")(lambda: "ran")
    done = app.enqueue("after")
    app.run_until_idle(timeout=BOUND)
    assert not app.cancel_job(done)
    assert not app.cancel_job("no-such-job")
    assert app.get_job(done).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]


def test_a_store_without_the_capability_cancels_pending_jobs_only(db: str) -> None:
    store = NoRunningCancelStore(db)
    assert not isinstance(store, SupportsRunningCancel)
    application = Ratchet(store, **FAST)
    stoppable = Stoppable()
    register(application, stoppable, is_async=False)
    try:
        pending = application.enqueue("after")
        assert application.cancel_job(pending)
        running = application.enqueue("stoppable")
        with application.worker(concurrency=1) as worker:
            assert stoppable.began.wait(BOUND)
            assert not application.cancel_job(running)
            assert application.get_job(running).status is JobStatus.RUNNING  # type: ignore[union-attr]
            assert not any(t.name == "ratchet-cancels" for t in worker._threads)
            stoppable.release.set()
        assert application.get_job(running).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
        assert not stoppable.stopped.is_set()
    finally:
        application.close()


def test_a_cancel_that_arrives_before_the_body_starts_applies_at_once() -> None:
    """Between claim and body (or while claimed ahead) a cancel has no context to reach;
    the attempt is asked to stop as soon as it starts."""
    attempts = RunningAttempts()
    assert not attempts.request_cancel("job-1")
    context = _context("job-1")
    attempts.add(context)
    assert context.cancel_requested
    other = _context("job-2")
    attempts.add(other)
    assert not other.cancel_requested  # a cancel reaches its own job only
    attempts.discard(other)
    assert not attempts.request_cancel("job-2")


def test_a_canceled_job_waiting_for_a_slot_never_starts(db: str) -> None:
    store = SQLiteJobStore(db)
    for _ in range(3):
        store.enqueue(new_job())
    claimed = store.claim_due_jobs(node_id="n", limit=3, priority_boost_seconds=0)
    store.close()
    queue = ReadyQueue(concurrency=1, prefetch_seconds=1, max_ahead=10)
    queue.push(claimed)
    assert queue.remove(claimed[1].id) and not queue.remove(claimed[1].id)
    assert queue.ids() == [claimed[0].id, claimed[2].id]


def test_the_check_reads_only_while_jobs_are_held_and_outlives_a_store_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked: list[list[str]] = []

    class Store:
        def cancel_running_job(self, job_id: str, claim_seq: int, *, message: str) -> bool:
            return False

        def canceled_among(self, job_ids: list[str]) -> frozenset[str]:
            asked.append(list(job_ids))
            if len(asked) == 1:
                raise OSError("store away")
            return frozenset(job_ids[:1])

    held: list[str] = []
    canceled: list[str] = []
    watch = CancelWatch(Store(), held=lambda: held, cancel=canceled.append, interval=0.01)  # type: ignore[arg-type]
    assert watch.check() == [] and asked == []  # nothing held: no read at all
    held[:] = ["x", "y", "x"]  # running and claimed ahead: asked about once each
    with caplog.at_level(logging.WARNING, logger="ratchet"):
        assert watch.check() == []
        assert watch.check() == ["x"]
    assert asked[-1] == ["x", "y"] and canceled == ["x"]
    assert [r.getMessage() for r in caplog.records if "canceled jobs" in r.getMessage()]


def _context(job_id: str) -> JobContext:
    return JobContext(
        id=job_id,
        name="n",
        attempt=1,
        claim_seq=1,
        logger=logging.LoggerAdapter(logging.getLogger("test")),
    )


def test_a_cancel_hint_over_the_coordinator_makes_the_other_node_check_at_once(
    db: str,
) -> None:
    """With the worker's own check 30 s away, a cancel made on another node reaches the
    body through the coordinator's cancel hint (the kit's in-process loopback transport):
    the hint makes the worker read the store now."""
    harness = LoopbackHarness()
    working = Ratchet(SQLiteJobStore(db), **{**SLOW_POLL, "coordinator": harness.create("w")})
    canceling = Ratchet(SQLiteJobStore(db), **{**FAST, "coordinator": harness.create("c")})
    stoppable = Stoppable()
    register(working, stoppable, is_async=False)
    try:
        job_id = working.enqueue("stoppable")
        with working.worker(concurrency=1):
            assert stoppable.began.wait(BOUND)
            assert canceling.cancel_job(job_id)
            assert stoppable.stopped.wait(5), "the cancel hint did not reach the worker"
    finally:
        working.close()
        canceling.close()
        harness.close()


def test_negative_control_a_forged_cancel_hint_stops_nothing(db: str) -> None:
    """A cancel hint naming a running job that nobody canceled makes the worker read the
    store, which says the job is not canceled: the body runs on (only the store's answer
    stops a job)."""
    harness = LoopbackHarness()
    working = Ratchet(SQLiteJobStore(db), **{**SLOW_POLL, "coordinator": harness.create("w")})
    forger = harness.create("forger")
    stoppable = Stoppable()
    register(working, stoppable, is_async=False)
    try:
        job_id = working.enqueue("stoppable")
        with working.worker(concurrency=1):
            assert stoppable.began.wait(BOUND)
            forger.notify_canceled([job_id])  # type: ignore[attr-defined]
            assert not stoppable.stopped.wait(1.0), "a hint alone stopped the job"
            stoppable.release.set()
        assert working.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    finally:
        working.close()
        forger.close()
        harness.close()

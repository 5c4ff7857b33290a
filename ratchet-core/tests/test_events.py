"""Lifecycle events, middleware and job callbacks (issue #16, "Lifecycle events", "Callbacks").

When one of these fails, look at ``ratchet._engine.lifecycle`` (what is emitted, with
which fields), ``ratchet._event_bus`` (delivery, per-job order, failing subscribers),
``ratchet._observers`` (middleware, enqueue events), ``ratchet._engine.outcomes`` (where
outcome events are emitted after the write) and ``ratchet._engine.callbacks``.
Waits are failure bounds only; nothing asserts a duration.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from ratchet import DoNotRetry, JobResult, JobStatus, Ratchet, current_job
from ratchet._engine import lifecycle as lifecycle_module
from ratchet._event_bus import EventBus
from ratchet.errors import JobDefinitionError
from ratchet.events import (
    Event,
    JobCallbackFailed,
    JobCanceled,
    JobDeadLettered,
    JobEnqueued,
    JobEvent,
    JobFailed,
    JobStarted,
    JobSucceeded,
    NodeStarted,
    NodeStopped,
    OrphansRecovered,
    OutcomeRejected,
    RecurringFired,
    StoreRecovered,
    StoreUnavailable,
)
from ratchet.plugins import hookimpl, register_process_plugin, unregister_process_plugin

BOUND = 30.0


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class Recorder:
    """Every event delivered, in delivery order (thread-safe)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, job_id: str) -> list[str]:
        """The names of one job's events, in order, with attempt where it applies."""
        with self._lock:
            events = [e for e in self.events if isinstance(e, JobEvent) and e.job_id == job_id]
        return [_label(e) for e in events]

    def kinds(self) -> list[str]:
        with self._lock:
            return [type(e).__name__ for e in self.events]

    def first(self, kind: type[Event]) -> Any:
        with self._lock:
            return next(e for e in self.events if isinstance(e, kind))


def _label(event: Event) -> str:
    name = type(event).__name__
    attempt = getattr(event, "attempt", None)
    return f"{name}({attempt})" if attempt is not None else name


@pytest.fixture(params=["memory", "sqlite"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ratchet]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'events.db'}"
    application = Ratchet(url, **FAST)
    yield application
    application.close()


@pytest.fixture
def recorder(app: Ratchet) -> Recorder:
    recorder = Recorder()
    app.on(Event, recorder)
    return recorder


# -- exact sequences ---------------------------------------------------------------------------


def test_a_success_is_enqueued_started_and_succeeded(app: Ratchet, recorder: Recorder) -> None:
    @app.job(name="double")
    def double(x: int) -> int:
        return x * 2

    job_id = double.enqueue(21)
    app.run_until_idle(timeout=BOUND)
    assert recorder.of(job_id) == ["JobEnqueued", "JobStarted(1)", "JobSucceeded(1)"]
    kinds = recorder.kinds()
    assert kinds[0] == "JobEnqueued" and "NodeStarted" in kinds and kinds[-1] == "NodeStopped"
    started: JobStarted = recorder.first(JobStarted)
    succeeded: JobSucceeded = recorder.first(JobSucceeded)
    assert (started.name, started.claim_seq, started.node_id) == ("double", 1, app.node_id)
    assert started.queue_wait_seconds >= 0 and not started.redelivered
    assert succeeded.duration_seconds >= 0 and succeeded.priority == started.priority
    # Times are on the database clock (here the same machine): close to its reading.
    now = app.store.database_time()
    for event in recorder.events:
        assert event.at is not None and abs((now - event.at).total_seconds()) < BOUND


def test_a_retry_then_success_reports_each_attempt(app: Ratchet, recorder: Recorder) -> None:
    calls: list[int] = []

    @app.job(name="flaky", max_retries=3, backoff_ms=10)
    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("the payment API is down")
        return "ok"

    job_id = flaky.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert recorder.of(job_id) == [
        "JobEnqueued",
        "JobStarted(1)",
        "JobFailed(1)",
        "JobStarted(2)",
        "JobSucceeded(2)",
    ]
    failed: JobFailed = recorder.first(JobFailed)
    assert failed.will_retry and failed.error_type == "ConnectionError"
    assert failed.error_message == "the payment API is down"
    assert failed.retry_delay_seconds is not None and failed.retry_delay_seconds > 0
    assert failed.next_attempt_at is not None and failed.at is not None
    assert failed.next_attempt_at - failed.at == timedelta(seconds=failed.retry_delay_seconds)
    second_start = [e for e in recorder.events if isinstance(e, JobStarted)][1]
    assert second_start.claim_seq == 2


def test_retries_exhausted_end_in_a_dead_letter_after_the_last_failure(
    app: Ratchet, recorder: Recorder
) -> None:
    @app.job(name="broken", max_retries=1, backoff_ms=1)
    def broken() -> None:
        raise ValueError("bad row 7")

    job_id = broken.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert recorder.of(job_id) == [
        "JobEnqueued",
        "JobStarted(1)",
        "JobFailed(1)",
        "JobStarted(2)",
        "JobFailed(2)",
        "JobDeadLettered(2)",
    ]
    failures = [e for e in recorder.events if isinstance(e, JobFailed)]
    assert [f.will_retry for f in failures] == [True, False]
    assert failures[1].next_attempt_at is None
    dead: JobDeadLettered = recorder.first(JobDeadLettered)
    assert (dead.reason, dead.error_type, dead.error_message) == (
        "retries_exhausted",
        "ValueError",
        "bad row 7",
    )


def test_do_not_retry_dead_letters_at_once_as_a_permanent_error(
    app: Ratchet, recorder: Recorder
) -> None:
    @app.job(name="refuse", max_retries=5)
    def refuse() -> None:
        raise DoNotRetry("card declined")

    job_id = refuse.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert recorder.of(job_id) == [
        "JobEnqueued",
        "JobStarted(1)",
        "JobFailed(1)",
        "JobDeadLettered(1)",
    ]
    dead: JobDeadLettered = recorder.first(JobDeadLettered)
    assert dead.reason == "permanent_error" and dead.error_message == "card declined"


def test_a_stale_outcome_is_rejected_not_reported_as_success(
    app: Ratchet, recorder: Recorder
) -> None:
    """The body loses its claim (released and claimed by another node) before it returns:
    its success is refused by the fence, and reported as OutcomeRejected only."""
    store = app.store

    @app.job(name="slow")
    def slow() -> None:
        job = current_job()
        assert store.release_claim(job.id, job.claim_seq, message="taken away")
        [other] = store.claim_due_jobs(node_id="another-node", limit=1, priority_boost_seconds=0)
        assert other.claim_seq == job.claim_seq + 1

    job_id = slow.enqueue()
    app.run_until_idle(timeout=BOUND, wait_for_retries=False)
    assert recorder.of(job_id) == ["JobEnqueued", "JobStarted(1)", "OutcomeRejected(1)"]
    rejected: OutcomeRejected = recorder.first(OutcomeRejected)
    assert (rejected.outcome, rejected.claim_seq) == ("succeeded", 1)


def test_a_cancel_is_reported(app: Ratchet, recorder: Recorder) -> None:
    @app.job(name="later")
    def later() -> None: ...

    job_id = app.builder(later).delay(seconds=3600).submit()
    assert app.cancel_job(job_id)
    assert not app.cancel_job(job_id)  # nothing canceled, nothing reported
    assert recorder.of(job_id) == ["JobEnqueued", "JobCanceled"]
    canceled: JobCanceled = recorder.first(JobCanceled)
    assert canceled.name == "later" and canceled.at is not None
    enqueued: JobEnqueued = recorder.first(JobEnqueued)
    assert enqueued.scheduled_at is None and not enqueued.transactional


def test_a_node_reports_its_own_claims_recovered_at_start(app: Ratchet, recorder: Recorder) -> None:
    @app.job(name="left")
    def left() -> None: ...

    job_id = left.enqueue()
    # A previous run of this node id claimed the job and died without releasing it.
    [claimed] = app.store.claim_due_jobs(
        node_id=app.node_id, limit=1, start_now=1, priority_boost_seconds=0
    )
    assert claimed.id == job_id
    app.run_until_idle(timeout=BOUND)
    recovered: OrphansRecovered = recorder.first(OrphansRecovered)
    assert (recovered.reset, recovered.dead_lettered, recovered.own) == (1, 0, True)
    assert recorder.of(job_id)[-2:] == ["JobStarted(1)", "JobSucceeded(1)"]
    assert recorder.first(JobStarted).redelivered


def test_store_outages_are_reported_once_per_streak(app: Ratchet, recorder: Recorder) -> None:
    store: Any = app.store
    claim = store.claim_due_jobs
    failures = {"left": 3}

    def flaky_claim(**kwargs: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("connection refused by 127.0.0.1:5432 password=hunter2")
        return claim(**kwargs)

    store.claim_due_jobs = flaky_claim
    with app.worker():
        wait_for(lambda: "StoreRecovered" in recorder.kinds(), "the store to recover")
    assert recorder.kinds().count("StoreUnavailable") == 1
    unavailable: StoreUnavailable = recorder.first(StoreUnavailable)
    assert unavailable.operation == "claim jobs" and "hunter2" not in unavailable.error
    recovered: StoreRecovered = recorder.first(StoreRecovered)
    assert recovered.failures == 3 and recovered.unavailable_seconds >= 0


def test_a_recurring_fire_is_enqueued_then_reported_with_its_lag(tmp_path: Path) -> None:
    app = Ratchet(f"sqlite:///{tmp_path / 'cron.db'}", **FAST)
    recorder = Recorder()
    app.on(Event, recorder)

    @app.recurring("* * * * * *", id="tick")
    def tick() -> None: ...

    try:
        with app.worker():
            wait_for(lambda: "RecurringFired" in recorder.kinds(), "a fire")
    finally:
        app.close()
    fired: RecurringFired = recorder.first(RecurringFired)
    assert fired.schedule_id == "tick" and fired.lag_seconds >= 0
    assert recorder.of(fired.job_id)[:2] == ["JobEnqueued", "RecurringFired"]
    enqueued = next(
        e for e in recorder.events if isinstance(e, JobEnqueued) and e.job_id == fired.job_id
    )
    assert enqueued.recurring_id == "tick"


def test_node_events_frame_a_worker(app: Ratchet, recorder: Recorder) -> None:
    with app.worker(concurrency=3):
        pass
    started: NodeStarted = recorder.first(NodeStarted)
    stopped: NodeStopped = recorder.first(NodeStopped)
    assert (started.concurrency, started.node_id) == (3, app.node_id)
    assert (stopped.released, stopped.crashed) == (0, False)


# -- delivery ----------------------------------------------------------------------------------


def test_a_subscriber_that_raises_changes_nothing_and_is_logged_rate_limited(
    app: Ratchet, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_subscriber(event: JobStarted) -> None:
        raise RuntimeError("subscriber bug")

    app.on(JobStarted, broken_subscriber)

    @app.job(name="fine")
    def fine() -> str:
        return "done"

    ids = [fine.enqueue(), fine.enqueue()]
    with caplog.at_level(logging.ERROR, logger="ratchet.events"):
        app.run_until_idle(timeout=BOUND)
    assert all(app.get_job(i).status is JobStatus.SUCCEEDED for i in ids)  # type: ignore[union-attr]
    assert all(recorder.of(i)[-1] == "JobSucceeded(1)" for i in ids)
    assert app.observers.events.subscriber_errors == 2
    reports = [r for r in caplog.records if "broken_subscriber" in r.getMessage()]
    assert len(reports) == 1, "the second failure within a minute is counted, not logged"


def test_unsubscribing_stops_delivery(app: Ratchet) -> None:
    got: list[Event] = []
    subscription = app.on(JobEnqueued, got.append)

    @app.job(name="noop")
    def noop() -> None: ...

    noop.enqueue()
    subscription.unsubscribe()
    subscription.unsubscribe()  # idempotent
    noop.enqueue()
    with app.on(JobEnqueued, got.append):
        noop.enqueue()
    noop.enqueue()
    assert len(got) == 2


def test_subscribing_to_something_that_is_not_an_event_is_refused(app: Ratchet) -> None:
    with pytest.raises(TypeError, match="event class from ratchet.events"):
        app.on(str, print)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="needs a callable"):
        app.on(JobStarted, "print")  # type: ignore[arg-type]


def test_with_no_subscriber_no_event_is_built(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cost with no subscriber is one check: the event object is never constructed.
    The negative control subscribes, and the same counting constructor is reached."""
    built: list[str] = []

    class CountedStarted(JobStarted):
        def __init__(self, **kwargs: Any) -> None:
            built.append("JobStarted")
            super().__init__(**kwargs)

    monkeypatch.setattr(lifecycle_module, "JobStarted", CountedStarted)

    @app.job(name="quiet")
    def quiet() -> None: ...

    job_id = quiet.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert app.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    assert built == [] and app.observers.events.delivered == 0
    got: list[Event] = []
    app.on(JobStarted, got.append)
    quiet.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert built == ["JobStarted"], "with a subscriber the event is built"
    assert [type(e) for e in got] == [CountedStarted]


@pytest.mark.parametrize("hold", [True, False], ids=["held", "negative-control"])
def test_a_job_started_by_this_process_during_its_enqueue_reports_the_enqueue_first(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch, hold: bool
) -> None:
    """An enqueue middleware keeps the enqueuing thread busy after the commit while a
    running worker of the same process claims and finishes the job: its JobStarted must
    still come after its JobEnqueued. Without the hold it comes first."""
    recorder = Recorder()
    app.on(Event, recorder)
    if not hold:
        monkeypatch.setattr(EventBus, "hold", lambda self, ids: False)
    finished = threading.Event()

    @app.job(name="quick")
    def quick() -> None:
        finished.set()

    @contextmanager
    def slow_after_write(_jobs: Any) -> Iterator[None]:
        yield
        finished.wait(BOUND)  # the commit is done; the worker runs the job meanwhile

    with app.worker():
        time.sleep(0.3)  # let the worker settle into polling
        app.add_enqueue_middleware(slow_after_write)
        job_id = quick.enqueue()
        wait_for(lambda: "JobSucceeded(1)" in recorder.of(job_id), "the job to succeed")
    order = recorder.of(job_id)
    if hold:
        assert order == ["JobEnqueued", "JobStarted(1)", "JobSucceeded(1)"]
    else:
        assert order.index("JobStarted(1)") < order.index("JobEnqueued")


# -- middleware --------------------------------------------------------------------------------


def test_execution_middleware_wraps_the_body_in_its_thread_and_sees_its_error(
    app: Ratchet,
) -> None:
    seen: list[tuple[str, str, int, str | None]] = []

    @contextmanager
    def tracer(context: Any) -> Iterator[None]:
        assert current_job().id == context.id  # entered with the job's context set
        thread = threading.current_thread().name
        try:
            yield
        except BaseException as exc:
            seen.append((context.name, thread, context.attempt, type(exc).__name__))
            raise
        seen.append((context.name, thread, context.attempt, None))

    @contextmanager
    def swallower(_context: Any) -> Iterator[None]:
        with suppress(Exception):  # a middleware cannot turn a failure into a success
            yield

    def broken(_context: Any) -> Any:
        raise RuntimeError("middleware bug")

    app.add_middleware(broken)
    app.add_middleware(tracer)
    app.add_middleware(swallower)

    @app.job(name="ok")
    def ok() -> int:
        return 1

    @app.job(name="bad", max_retries=0)
    def bad() -> None:
        raise KeyError("missing")

    @app.job(name="async_ok")
    async def async_ok() -> int:
        return 2

    ok_id, bad_id, async_id = ok.enqueue(), bad.enqueue(), async_ok.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert app.get_job(ok_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    assert app.get_job(bad_id).status is JobStatus.FAILED  # type: ignore[union-attr]
    assert app.get_job(async_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    by_name = {name: (thread, error) for name, thread, _attempt, error in seen}
    assert by_name["ok"][1] is None and by_name["ok"][0].startswith("ratchet-job")
    assert by_name["bad"][1] == "KeyError"
    assert by_name["async_ok"] == ("ratchet-async-jobs", None)


def test_enqueue_middleware_adds_params_and_sees_a_failed_write(app: Ratchet) -> None:
    exits: list[str | None] = []

    @contextmanager
    def carrier(jobs: Any) -> Iterator[dict[str, str]]:
        try:
            yield {"ratchet.traceparent": f"00-{len(jobs):032x}-{1:016x}-01"}
        except BaseException as exc:
            exits.append(type(exc).__name__)
            raise
        exits.append(None)

    def broken(_jobs: Any) -> Any:
        raise RuntimeError("middleware bug")

    app.add_enqueue_middleware(broken)
    handle = app.add_enqueue_middleware(carrier)

    @app.job(name="carried")
    def carried(n: int) -> None: ...

    one = app.builder(carried, 1).idempotency_key("once").submit()
    many = app.enqueue_many(carried, [(2,), (3,)])
    with pytest.raises(Exception, match="once"):
        app.builder(carried, 4).idempotency_key("once").submit()
    assert app.get_job(one).params["ratchet.traceparent"].endswith(f"{1:032x}-{1:016x}-01")  # type: ignore[union-attr]
    assert all(
        app.get_job(i).params["ratchet.traceparent"] == f"00-{2:032x}-{1:016x}-01"  # type: ignore[union-attr]
        for i in many
    )
    assert exits[:2] == [None, None] and exits[2] is not None
    handle.remove()
    plain = carried.enqueue(5)
    assert "ratchet.traceparent" not in app.get_job(plain).params  # type: ignore[union-attr]


# -- plugins -----------------------------------------------------------------------------------


class _SubscribingPlugin:
    def __init__(self) -> None:
        self.recorder = Recorder()

    @hookimpl
    def ratchet_application(self, app: Ratchet) -> None:
        app.on(JobEnqueued, self.recorder)


class _BrokenPlugin:
    @hookimpl
    def ratchet_application(self, app: Ratchet) -> None:
        raise RuntimeError("plugin bug")


def test_an_installed_plugin_subscribes_through_the_application_hook(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plugin = _SubscribingPlugin()
    register_process_plugin(plugin, "test-subscriber")
    register_process_plugin(_BrokenPlugin(), "test-broken")
    try:
        with caplog.at_level(logging.ERROR):
            app = Ratchet("memory://", **FAST)
    finally:
        unregister_process_plugin("test-subscriber")
        unregister_process_plugin("test-broken")

    @app.job(name="seen")
    def seen() -> None: ...

    job_id = seen.enqueue()
    assert plugin.recorder.of(job_id) == ["JobEnqueued"]
    assert any("test-broken" in r.getMessage() for r in caplog.records)
    later = Ratchet("memory://", **FAST)  # registered for the process no more
    assert later.plugins.manager.get_plugin("test-subscriber") is None


# -- callbacks ---------------------------------------------------------------------------------

RESULTS: list[JobResult] = []


def record_result(result: JobResult) -> None:
    RESULTS.append(result)


def raising_callback(result: JobResult) -> None:
    RESULTS.append(result)
    raise RuntimeError("callback bug")


@pytest.fixture(autouse=False)
def results() -> Iterator[list[JobResult]]:
    RESULTS.clear()
    yield RESULTS
    RESULTS.clear()


def test_on_success_runs_once_with_the_result(app: Ratchet, results: list[JobResult]) -> None:
    @app.job(name="total", on_success=record_result, on_failure=record_result)
    def total(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    job_id = total.enqueue(2, 3)
    app.run_until_idle(timeout=BOUND)
    [result] = results
    assert (result.job_id, result.succeeded, result.value, result.attempt) == (
        job_id,
        True,
        {"sum": 5},
        1,
    )
    assert result.duration_seconds is not None and result.error is None


def test_on_failure_runs_once_after_the_last_retry_only(
    app: Ratchet, results: list[JobResult]
) -> None:
    @app.job(name="doomed", max_retries=2, backoff_ms=1, on_failure=record_result)
    def doomed() -> None:
        raise ValueError("nope")

    job_id = doomed.enqueue()
    app.run_until_idle(timeout=BOUND)
    [result] = results
    assert (result.job_id, result.succeeded, result.attempt) == (job_id, False, 3)
    assert result.error_type == "ValueError"
    assert result.error is not None and result.error.startswith("ValueError: nope")


def test_builder_callbacks_override_the_job_defaults(
    app: Ratchet, results: list[JobResult]
) -> None:
    @app.job(name="plain", on_success=raising_callback)
    def plain() -> int:
        return 7

    app.builder(plain).on_success(record_result).submit()
    app.builder(plain).on_success(None).submit()
    app.run_until_idle(timeout=BOUND)
    assert [r.value for r in results] == [7]


def test_a_failing_callback_changes_nothing_and_is_not_retried(
    app: Ratchet, results: list[JobResult]
) -> None:
    failed: list[JobCallbackFailed] = []
    app.on(JobCallbackFailed, failed.append)

    @app.job(name="fine", on_success=raising_callback)
    def fine() -> str:
        return "kept"

    job_id = fine.enqueue()
    app.run_until_idle(timeout=BOUND)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.SUCCEEDED and job.result == "kept"
    assert len(results) == 1
    [report] = failed
    assert (report.job_id, report.kind, report.error_type) == (
        job_id,
        "on_success",
        "RuntimeError",
    )


def test_a_callback_path_outside_the_allowlist_is_refused(tmp_path: Path) -> None:
    """A stored path this application did not name is untrusted: refused unless its
    module is allowed (the negative control allows it, and it runs)."""
    for allowed, expect_run in (((), False), (("test_events",), True)):
        RESULTS.clear()
        app = Ratchet("memory://", allowed_modules=allowed, **FAST)
        failed: list[JobCallbackFailed] = []
        app.on(JobCallbackFailed, failed.append)

        @app.job(name="pathy")
        def pathy() -> int:
            return 1

        app.builder(pathy).on_success("test_events:record_result").submit()
        app.run_until_idle(timeout=BOUND)
        assert bool(RESULTS) is expect_run
        assert bool(failed) is not expect_run
        if failed:
            assert failed[0].error_type.endswith("TargetNotAllowedError")
        app.close()
    RESULTS.clear()


def test_a_malformed_callback_is_refused_where_it_is_written(app: Ratchet) -> None:
    with pytest.raises(JobDefinitionError, match="'not a path'"):

        @app.job(name="x", on_failure="not a path")
        def x() -> None: ...

    @app.job(name="y")
    def y() -> None: ...

    with pytest.raises(JobDefinitionError, match="import path"):
        app.builder(y).on_success(42)  # type: ignore[arg-type]


def test_on_failure_runs_for_the_crash_limit_dead_letter(
    app: Ratchet, results: list[JobResult], recorder: Recorder
) -> None:
    """A job that crashed its nodes too often is dead-lettered by orphan recovery, with
    no attempt finished: its on_failure runs, after a JobDeadLettered(crash_limit)."""

    @app.job(name="poison", on_failure=record_result)
    def poison() -> None: ...

    job_id = poison.enqueue()
    app.store.claim_due_jobs(node_id="crashed-node", limit=1, start_now=1, priority_boost_seconds=0)
    worker = app.worker()
    recovery = app.store.recover_node_claims("crashed-node", max_crash_redeliveries=0, limit=10)
    assert recovery.exhausted, "the store should report the claim at the crash limit"
    assert worker.maintenance.fail_exhausted(recovery) == 1
    worker.callbacks.close(timeout=BOUND)
    [result] = results
    assert (result.job_id, result.succeeded, result.error_type) == (
        job_id,
        False,
        "ratchet.CrashLimitReached",
    )
    dead: JobDeadLettered = recorder.first(JobDeadLettered)
    assert (dead.job_id, dead.reason) == (job_id, "crash_limit")
    assert recorder.of(job_id) == ["JobEnqueued", "JobDeadLettered(0)"]

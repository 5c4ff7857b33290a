"""Running jobs: order, retries, dead-lettering, poison jobs, async jobs, timeouts, results."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

import ratchet
from conftest import FAST, Recorder
from ratchet import BackoffPolicy, JobPriority, JobStatus, Ratchet
from ratchet.spi import RetryPolicy


def wait_for(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def test_concurrency_one_runs_in_claim_order(app: Ratchet, recorder: Recorder) -> None:
    """Priority first, then scheduled time, then id (enqueue order)."""

    @app.job
    def step(label: str) -> None:
        recorder.add(label)

    past = datetime.now(UTC) - timedelta(seconds=5)
    step.builder("low").priority(JobPriority.LOW).submit()
    step.builder("normal-2").submit()
    step.builder("critical").priority(JobPriority.CRITICAL).submit()
    step.builder("normal-1-older").at(past).submit()
    step.builder("high").priority(JobPriority.HIGH).submit()
    step.builder("lowest").priority(JobPriority.LOWEST).submit()
    step.builder("normal-3").submit()
    app.run_until_idle(timeout=30, concurrency=1)
    assert recorder.events == [
        "critical",
        "high",
        "normal-1-older",
        "normal-2",
        "normal-3",
        "low",
        "lowest",
    ]


def test_age_boost_lets_an_old_low_priority_job_overtake() -> None:
    app = Ratchet("memory://", priority_boost_minutes=1, **FAST)
    order: list[str] = []

    @app.job
    def step(label: str) -> None:
        order.append(label)

    # Waited 5 minutes at LOWEST: effective 0 + 5 beats a fresh CRITICAL (4).
    step.builder("old-lowest").priority(JobPriority.LOWEST).at(
        datetime.now(UTC) - timedelta(minutes=5, seconds=1)
    ).submit()
    step.builder("fresh-critical").priority(JobPriority.CRITICAL).submit()
    app.run_until_idle(timeout=30, concurrency=1)
    assert order == ["old-lowest", "fresh-critical"]

    disabled = Ratchet("memory://", priority_boost_minutes=0, **FAST)
    order.clear()
    step2 = disabled.job(step.definition.func)
    step2.builder("old-lowest").priority(JobPriority.LOWEST).at(
        datetime.now(UTC) - timedelta(hours=5)
    ).submit()
    step2.builder("fresh-critical").priority(JobPriority.CRITICAL).submit()
    disabled.run_until_idle(timeout=30, concurrency=1)
    assert order == ["fresh-critical", "old-lowest"]


def test_retries_then_success_counts_attempts(app: Ratchet) -> None:
    @app.job(max_retries=3, backoff=BackoffPolicy.NONE)
    def flaky() -> str:
        if ratchet.current_job().attempt < 3:
            raise ConnectionError("down")
        return "ok"

    job_id = flaky.enqueue()
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.result, job.result_type) == (
        JobStatus.SUCCEEDED,
        3,
        "ok",
        "str",
    )
    runs = app.executions(job_id)
    assert [(e.attempt, e.status.value) for e in runs] == [
        (1, "FAILED"),
        (2, "FAILED"),
        (3, "SUCCEEDED"),
    ]
    assert "ConnectionError: down" in (runs[0].message or "")


def test_exhausted_retries_dead_letter_after_max_retries_plus_one(app: Ratchet) -> None:
    calls: list[int] = []

    @app.job(max_retries=2, backoff=BackoffPolicy.NONE)
    def always_fails() -> None:
        calls.append(ratchet.current_job().attempt)
        raise ValueError("bad row 17")

    job_id = always_fails.enqueue()
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None
    assert calls == [1, 2, 3]
    assert (job.status, job.attempts) == (JobStatus.FAILED, 3)
    assert job.last_error is not None and job.last_error.startswith("ValueError: bad row 17")
    assert [j.id for j in app.list_jobs(status=JobStatus.FAILED)] == [job_id]


def test_backoff_delays_the_retry(app: Ratchet) -> None:
    @app.job(max_retries=1, backoff=BackoffPolicy.FIXED, backoff_ms=60_000)
    def fails() -> None:
        raise RuntimeError("later")

    job_id = fails.enqueue()
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.PENDING and job.attempts == 1
    wait = (job.scheduled_at - app.store.database_time()).total_seconds()
    assert 55 < wait <= 60


def test_do_not_retry_goes_straight_to_the_dlq(app: Ratchet) -> None:
    class Invalid(ratchet.DoNotRetry):
        pass

    @ratchet.do_not_retry
    class Refused(Exception):
        pass

    class RefusedChild(Refused):
        pass

    @app.job(max_retries=5, backoff=BackoffPolicy.NONE)
    def reject(kind: str) -> None:
        raise {"base": Invalid, "marked": Refused, "child": RefusedChild}[kind]("no")

    ids = [reject.enqueue(kind) for kind in ("base", "marked", "child")]
    app.run_until_idle(timeout=30)
    for job_id in ids:
        job = app.get_job(job_id)
        assert job is not None and (job.status, job.attempts) == (JobStatus.FAILED, 1)


def test_retry_policy_decides_and_may_set_the_delay() -> None:
    class OnlyTimeouts(RetryPolicy):
        def should_retry(self, attempt: int, cause: BaseException) -> bool:
            return isinstance(cause, TimeoutError)

        def get_delay(self, attempt: int) -> float:
            return 3600.0

    app = Ratchet("memory://", retry_policy=OnlyTimeouts(), **FAST)

    @app.job(max_retries=3, backoff=BackoffPolicy.NONE)
    def fails(kind: str) -> None:
        raise TimeoutError() if kind == "timeout" else KeyError(kind)

    retried, dead = fails.enqueue("timeout"), fails.enqueue("key")
    app.run_until_idle(timeout=30)
    job = app.get_job(retried)
    assert job is not None and job.status is JobStatus.PENDING
    assert (job.scheduled_at - app.store.database_time()).total_seconds() > 3500
    assert app.get_job(dead).status is JobStatus.FAILED  # type: ignore[union-attr]


def test_manual_retry_from_the_dlq(app: Ratchet) -> None:
    state = {"fail": True}

    @app.job(max_retries=0)
    def sometimes() -> str:
        if state["fail"]:
            raise RuntimeError("first time")
        return "fixed"

    job_id = sometimes.enqueue()
    app.run_until_idle(timeout=30)
    assert app.retry_job(job_id) is True
    job = app.get_job(job_id)
    assert job is not None and (job.status, job.attempts, job.last_error) == (
        JobStatus.PENDING,
        0,
        None,
    )
    assert app.retry_job(job_id) is False  # only FAILED jobs
    state["fail"] = False
    app.run_until_idle(timeout=30)
    assert app.get_job(job_id).result == "fixed"  # type: ignore[union-attr]
    assert app.retry_job(job_id) is False


def test_delayed_job_is_not_run_before_it_is_due(app: Ratchet, recorder: Recorder) -> None:
    @app.job
    def later() -> None:
        recorder.add("ran")

    job_id = later.builder().delay(seconds=0.5).submit()
    app.run_until_idle(timeout=30)
    assert recorder.events == []
    time.sleep(0.6)
    app.run_until_idle(timeout=30)
    assert recorder.events == ["ran"]
    assert app.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]


def test_async_jobs_run_on_an_event_loop(app: Ratchet) -> None:
    import asyncio

    @app.job
    async def fetch(n: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"n": n, "attempt": ratchet.current_job().attempt}

    ids = [fetch.enqueue(n) for n in range(5)]
    with app.worker(concurrency=5):
        wait_for(lambda: all(app.get_job(i).status is JobStatus.SUCCEEDED for i in ids))  # type: ignore[union-attr]
    assert app.get_job(ids[3]).result == {"n": 3, "attempt": 1}  # type: ignore[union-attr]
    assert app.get_job(ids[3]).result_type == "dict"  # type: ignore[union-attr]


def test_async_job_failure_retries(app: Ratchet) -> None:
    @app.job(max_retries=1, backoff=BackoffPolicy.NONE)
    async def broken() -> None:
        raise OSError("disk")

    job_id = broken.enqueue()
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and (job.status, job.attempts) == (JobStatus.FAILED, 2)


def test_timeouts_fail_sync_and_async_jobs(app: Ratchet) -> None:
    import asyncio

    release = threading.Event()

    @app.job(timeout=0.2, max_retries=0)
    def slow_sync() -> None:
        release.wait(5)

    @app.job(timeout=0.2, max_retries=0)
    async def slow_async() -> None:
        await asyncio.sleep(5)

    sync_id, async_id = slow_sync.enqueue(), slow_async.enqueue()
    app.run_until_idle(timeout=30)
    release.set()
    for job_id in (sync_id, async_id):
        job = app.get_job(job_id)
        assert job is not None and job.status is JobStatus.FAILED
        assert "exceeded its timeout of 0.2 s" in (job.last_error or "")


def test_unencodable_result_still_succeeds(app: Ratchet, caplog: pytest.LogCaptureFixture) -> None:
    @app.job
    def returns_object() -> object:
        return object()

    job_id = returns_object.enqueue()
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.SUCCEEDED
    assert (job.result, job.result_type) == (None, "object")
    assert "cannot be stored as JSON" in caplog.text


def test_current_job_exposes_id_attempt_params_and_logger(app: Ratchet) -> None:
    seen: dict[str, object] = {}

    @app.job
    def introspect() -> None:
        context = ratchet.current_job()
        seen.update(id=context.id, attempt=context.attempt, tenant=context.param("tenant"))
        context.logger.info("inside")

    job_id = introspect.builder().param("tenant", "acme").submit()
    app.run_until_idle(timeout=30)
    assert seen == {"id": job_id, "attempt": 1, "tenant": "acme"}


def test_worker_survives_poisoned_jobs(recorder: Recorder) -> None:
    """Refused, unimportable and undecodable targets fail into the DLQ; the worker goes on."""
    from ratchet._types import NewJob
    from ratchet._uuid import uuid7

    app = Ratchet("memory://", allowed_modules="no_such_module_xyz", **FAST)

    @app.job
    def healthy(n: int) -> None:
        recorder.add(n)

    def poison(target: str, args_json: str = "[]", name: str | None = None) -> str:
        job_id = str(uuid7())
        app.store.enqueue(
            NewJob(
                id=job_id, name=name or target, target=target, args_json=args_json, kwargs_json="{}"
            )
        )
        return job_id

    refused = poison("os:system", '["echo hacked"]')
    missing = poison("no_such_module_xyz:run")
    garbled = poison(healthy.definition.target, "not json", name=healthy.definition.name)
    good = [healthy.enqueue(n) for n in range(3)]
    with app.worker(concurrency=2):
        wait_for(
            lambda: (
                len(recorder.events) == 3
                and all(
                    app.get_job(i).status is JobStatus.FAILED for i in (refused, missing, garbled)
                )
            )
        )  # type: ignore[union-attr]
    assert sorted(recorder.events) == [0, 1, 2]  # type: ignore[type-var]
    assert all(app.get_job(i).status is JobStatus.SUCCEEDED for i in good)  # type: ignore[union-attr]
    refused_job = app.get_job(refused)
    assert refused_job is not None and refused_job.attempts == 1
    assert "neither a job registered" in (refused_job.last_error or "")
    assert "cannot be imported" in (app.get_job(missing).last_error or "")  # type: ignore[union-attr]
    assert "undecodable arguments" in (app.get_job(garbled).last_error or "")  # type: ignore[union-attr]


def test_allowlisted_module_may_run_unregistered_functions(app: Ratchet) -> None:
    from ratchet._types import NewJob

    allowed = Ratchet(app.store, allowed_modules="json", **FAST)
    allowed.store.enqueue(
        NewJob(
            id="j1",
            name="dumps",
            target="json:dumps",
            args_json=json.dumps([[1, 2]]),
            kwargs_json="{}",
        )
    )
    allowed.run_until_idle(timeout=30)
    assert allowed.get_job("j1").result == "[1, 2]"  # type: ignore[union-attr]


def test_a_sleeping_worker_wakes_on_local_enqueue() -> None:
    app = Ratchet(
        "memory://", poll_burst_seconds=0.02, poll_idle_max_seconds=60, coordinator="none"
    )
    done = threading.Event()

    @app.job
    def ping() -> None:
        done.set()

    with app.worker():
        time.sleep(0.3)  # let the poller back off towards its 60 s ceiling
        ping.enqueue()
        # Liveness, not timing: without the local wakeup this would wait up to 60 s.
        assert done.wait(10)


def test_worker_start_stop_and_drain_releases_unfinished_claims(app: Ratchet) -> None:
    started, release = threading.Event(), threading.Event()

    @app.job
    def long_job() -> str:
        started.set()
        release.wait(10)
        return "late"

    job_id = long_job.enqueue()
    worker = app.worker(concurrency=1).start()
    assert started.wait(10)
    worker.stop(timeout=0.1)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.crash_count) == (JobStatus.PENDING, 0, 0)
    assert worker.stats.released_at_shutdown == 1
    execution = app.executions(job_id)[0]
    assert execution.status.value == "RELEASED"
    assert execution.message == ratchet._messages.DRAIN_RELEASED_MESSAGE
    release.set()
    wait_for(lambda: worker.stats.stale_outcomes == 1)
    # The released worker's late result is fenced off: the job stays PENDING.
    assert app.get_job(job_id).status is JobStatus.PENDING  # type: ignore[union-attr]
    app.run_until_idle(timeout=30)
    assert app.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]


def test_run_until_idle_times_out(app: Ratchet) -> None:
    release = threading.Event()

    @app.job
    def stuck() -> None:
        release.wait(10)

    job_id = stuck.enqueue()
    with pytest.raises(TimeoutError, match="did not finish within 0.3 s"):
        app.run_until_idle(timeout=0.3)
    release.set()
    assert app.get_job(job_id).status is JobStatus.PENDING  # type: ignore[union-attr]

"""``raise Snooze(seconds)``: the job runs again later without using an attempt (issue #19,
last bullet).

When one of these fails, look at ``ratchet._failures.Snooze`` (the checked delay),
``ratchet._engine.runner.JobRunner.record_failure`` (a Snooze is no failure),
``ratchet._engine.outcomes.OutcomeRecorder._write_snooze`` (the fenced write and the
fallback to ``schedule_retry``), ``ratchet._engine.lifecycle.Lifecycle.snoozed`` and the
stores' ``snooze_job`` (the kit's ``SnoozeContracts`` check the stores themselves).
Waits are failure bounds only; nothing asserts a duration.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, Events
from ratchet import ExecutionStatus, JobResult, JobStatus, Ratchet, Snooze, current_job
from ratchet._engine.outcomes import OutcomeRecorder, Postpone
from ratchet.errors import BusinessKeyConflictError, ValueOutOfRangeError
from ratchet.events import Event, JobFailed, JobSnoozed, JobSucceeded, OutcomeRejected
from ratchet.spi import NewJob, SupportsSnooze, new_job_id
from ratchet.stores.sqlite.store import SQLiteJobStore

BOUND = 30.0  # failure bound for every wait: reached only when the behaviour is broken


class NoSnoozeStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    snooze_job = None  # type: ignore[assignment]  # hides the capability


CALLBACKS: list[JobResult] = []


def remember(result: JobResult) -> None:
    CALLBACKS.append(result)


@pytest.fixture
def store(tmp_path: Path) -> SQLiteJobStore:
    return SQLiteJobStore(str(tmp_path / "ratchet.db"))


@pytest.fixture
def app(store: SQLiteJobStore) -> Iterator[Ratchet]:
    assert isinstance(store, SupportsSnooze)
    CALLBACKS.clear()
    application = Ratchet(store, **FAST)
    yield application
    application.close()
    CALLBACKS.clear()


@pytest.fixture
def events(app: Ratchet) -> Events:
    recorder = Events()
    app.on(Event, recorder)
    return recorder


def snoozes_then_succeeds(app: Ratchet, *, name: str, times: int, is_async: bool) -> Any:
    """A job (``max_retries=0``) that snoozes ``times`` times for 0 s, then returns its
    attempt number; every run notes the attempt it saw in ``runs``."""
    runs: list[int] = []

    def body() -> int:
        job = current_job()
        assert job is not None
        runs.append(job.attempt)
        if len(runs) <= times:
            raise Snooze(0)
        return job.attempt

    async def async_body() -> int:
        return body()

    decorate = app.job(name=name, max_retries=0, on_success=remember, on_failure=remember)
    definition = decorate(async_body if is_async else body)
    return definition, runs


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_snoozes_use_no_attempt_and_no_retry(app: Ratchet, events: Events, is_async: bool) -> None:
    definition, runs = snoozes_then_succeeds(app, name="patient", times=3, is_async=is_async)
    job_id = definition.enqueue()
    app.run_until_idle(timeout=BOUND)

    job = app.get_job(job_id)
    assert job is not None
    # max_retries=0: any attempt used by a snooze would have dead-lettered it.
    assert (job.status, job.attempts, job.last_error) == (JobStatus.SUCCEEDED, 1, None)
    assert runs == [1, 1, 1, 1]  # every run is the first attempt
    executions = app.store.list_executions(job_id)
    assert [(e.status, e.message) for e in executions] == [
        (ExecutionStatus.RELEASED, "snoozed for 0 s"),
        (ExecutionStatus.RELEASED, "snoozed for 0 s"),
        (ExecutionStatus.RELEASED, "snoozed for 0 s"),
        (ExecutionStatus.SUCCEEDED, None),
    ]
    assert [e.claim_seq for e in executions] == [1, 2, 3, 4]

    snoozed = events.of(JobSnoozed)
    assert [(e.job_id, e.attempt, e.claim_seq, e.delay_seconds) for e in snoozed] == [
        (job_id, 1, 1, 0.0),
        (job_id, 1, 2, 0.0),
        (job_id, 1, 3, 0.0),
    ]
    assert events.of(JobFailed) == []
    [succeeded] = events.of(JobSucceeded)
    assert (succeeded.attempt, succeeded.claim_seq) == (1, 4)
    # The callbacks run once, for the success only: a snooze is not an end.
    assert [(r.job_id, r.succeeded, r.attempt) for r in CALLBACKS] == [(job_id, True, 1)]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_snoozed_job_waits_on_the_database_clock_keeping_its_key(
    app: Ratchet, events: Events, is_async: bool
) -> None:
    def body() -> None:
        raise Snooze(3600)

    async def async_body() -> None:
        body()

    decorate = app.job(name="later", on_success=remember, on_failure=remember)
    definition = decorate(async_body if is_async else body)
    job_id = definition.builder().business_key("order-7").submit()
    before = app.store.database_time()
    app.run_until_idle(timeout=BOUND, wait_for_retries=False)
    after = app.store.database_time()

    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.crash_count, job.last_error) == (
        JobStatus.PENDING,
        0,
        0,
        None,
    )
    assert job.owner is None
    assert before + timedelta(seconds=3600) <= job.scheduled_at
    assert job.scheduled_at <= after + timedelta(seconds=3600)
    [execution] = app.store.list_executions(job_id)
    assert (execution.status, execution.message) == (
        ExecutionStatus.RELEASED,
        "snoozed for 3600 s",
    )
    with pytest.raises(BusinessKeyConflictError):
        definition.builder().business_key("order-7").submit()
    [snoozed] = events.of(JobSnoozed)
    assert (snoozed.job_id, snoozed.name, snoozed.delay_seconds) == (job_id, "later", 3600.0)
    assert events.of(JobFailed) == [] and events.of(JobSucceeded) == []
    assert CALLBACKS == []


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (-1, "negative"),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
        (11 * 366 * 86400, "longer than 10 years"),
        ("30", "not a number of seconds"),
        (None, "not a number of seconds"),
        (True, "not a number of seconds"),
    ],
)
def test_bad_seconds_are_refused_where_snooze_is_built(seconds: Any, words: str) -> None:
    with pytest.raises(ValueOutOfRangeError, match="Snooze") as caught:
        Snooze(seconds)
    assert words in str(caught.value)
    assert "from 0 to" in str(caught.value)


def test_snooze_text_and_seconds() -> None:
    assert Snooze(30).seconds == 30.0
    assert str(Snooze(30)) == "snoozed for 30 s"
    assert str(Snooze(0.5)) == "snoozed for 0.5 s"


def test_a_stale_snooze_changes_nothing(app: Ratchet, events: Events) -> None:
    store = app.store
    job = NewJob(id=new_job_id(), name="n", target="m:f", args_json="[]", kwargs_json="{}")
    store.enqueue(job)
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert store.release_claim(job.id, claimed.claim_seq, message="released")
    recorder = OutcomeRecorder(store, lifecycle=None)

    outcome = recorder.record(claimed, lambda: Postpone(60.0, "snoozed for 60 s"))

    assert (outcome.kind, outcome.recorded) == ("stale", False)
    stored = store.get_job(job.id)
    assert stored is not None
    assert (stored.status, stored.attempts, stored.claim_seq) == (JobStatus.PENDING, 0, 1)
    assert stored.scheduled_at <= store.database_time()  # still due now, not in a minute


def test_a_stale_snooze_is_reported_as_rejected(app: Ratchet, events: Events) -> None:
    lost = threading.Event()

    @app.job(name="loses-claim")
    def loses_claim() -> None:
        job = current_job()
        assert job is not None
        if job.claim_seq == 1:
            assert app.store.release_claim(job.id, job.claim_seq, message="taken away")
            lost.set()
            raise Snooze(3600)

    job_id = loses_claim.enqueue()
    app.run_until_idle(timeout=BOUND)

    assert lost.is_set()
    job = app.get_job(job_id)
    assert job is not None
    # The second claim ran it to success: the stale snooze did not push it an hour away.
    assert (job.status, job.attempts, job.claim_seq) == (JobStatus.SUCCEEDED, 1, 2)
    assert [(e.job_id, e.outcome) for e in events.of(OutcomeRejected)] == [(job_id, "snoozed")]
    assert events.of(JobSnoozed) == []


def test_without_the_capability_a_snooze_counts_an_attempt_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = NoSnoozeStore(str(tmp_path / "ratchet.db"))
    assert not isinstance(store, SupportsSnooze)
    app = Ratchet(store, **FAST)
    try:
        definition, runs = snoozes_then_succeeds(app, name="fallback", times=2, is_async=False)
        job_id = definition.builder().max_retries(5).submit()
        with caplog.at_level(logging.WARNING, logger="ratchet"):
            app.run_until_idle(timeout=BOUND)
        job = app.get_job(job_id)
        assert job is not None
        # Recorded as retries: each snooze used an attempt.
        assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 3)
        assert runs == [1, 2, 3]
        warnings = [r.getMessage() for r in caplog.records if "SupportsSnooze" in r.getMessage()]
        assert len(warnings) == 1
        assert "NoSnoozeStore" in warnings[0] and "attempt was counted" in warnings[0]
    finally:
        app.close()


def test_run_until_idle_waits_for_a_short_snooze_and_a_control_without_waiting(
    app: Ratchet,
) -> None:
    """A snooze due within the timeout is waited for, as a retry is; with
    ``wait_for_retries=False`` (the negative control, snoozing a minute so that no later
    claim can pick it up by chance) the job is left PENDING."""
    runs: list[int] = []

    @app.job(name="nap", max_retries=0)
    def nap(seconds: float) -> str:
        runs.append(1)
        if len(runs) == 1:
            raise Snooze(seconds)
        return "rested"

    waited = nap.enqueue(0.3)
    app.run_until_idle(timeout=BOUND)
    job = app.get_job(waited)
    assert job is not None and (job.status, job.result) == (JobStatus.SUCCEEDED, "rested")

    runs.clear()
    left = nap.enqueue(60)
    app.run_until_idle(timeout=BOUND, wait_for_retries=False)
    job = app.get_job(left)
    assert job is not None and job.status is JobStatus.PENDING, "it did not wait: control"

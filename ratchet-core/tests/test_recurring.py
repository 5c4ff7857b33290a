"""Recurring jobs: cron validation, once-per-instant fires, misfire policies, redeploys."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

import ratchet
from conftest import FAST
from ratchet import InvalidCronError, JobStatus, Misfire, Ratchet
from ratchet._engine.recurring import FIRE_TIME_PARAM, RecurringScheduler
from ratchet.spi import NewJob, new_job_id


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("* * * *", "has 4 fields"),
        ("61 * * * *", "is not valid"),
        ("every day", "has 2 fields"),
        ("0 0 30 2 * * *", "has 7 fields"),
    ],
)
def test_invalid_cron_fails_at_definition(app: Ratchet, cron: str, message: str) -> None:
    with pytest.raises(InvalidCronError, match=message):
        app.recurring(cron)
    with pytest.raises(ValueError, match=message):  # InvalidCronError is a ValueError
        app.recurring(cron)


def test_invalid_zone_and_misfire(app: Ratchet) -> None:
    with pytest.raises(InvalidCronError, match="Time zone 'Mars/Olympus' is unknown"):
        app.recurring("0 2 * * *", zone="Mars/Olympus")
    with pytest.raises(ValueError, match="Misfire policy 'sometimes'"):
        app.recurring("0 2 * * *", misfire="sometimes")
    with pytest.raises(ValueError, match=r"catch_up\(0\)"):
        Misfire.catch_up(0)


def test_schedule_recurring_validates_and_saves(app: Ratchet) -> None:
    @app.job
    def report(region: str) -> None: ...

    with pytest.raises(InvalidCronError):
        app.schedule_recurring(report, "nope", id="r")
    assert app.list_recurring() == []
    app.schedule_recurring(
        report,
        "*/5 * * * * *",
        id="eu-report",
        args=["eu"],
        tags=["Reports"],
        zone="Europe/Paris",
        misfire=Misfire.catch_up(2),
    )
    [saved] = app.list_recurring()
    assert (saved.id, saved.cron, saved.zone, saved.misfire) == (
        "eu-report",
        "*/5 * * * * *",
        "Europe/Paris",
        "catch_up:2",
    )
    assert (saved.args_json, saved.tags, saved.source) == ('["eu"]', ("reports",), "api")


def test_two_nodes_fire_each_instant_once(sqlite_url: str) -> None:
    """Two workers on one store, a schedule every second: each instant yields one job."""
    nodes = [Ratchet(sqlite_url, recurring_poll_max_seconds=0.2, **FAST) for _ in range(2)]
    for node in nodes:

        @node.recurring("* * * * * *", id="tick")
        def tick() -> str:
            return ratchet.current_job().param(FIRE_TIME_PARAM)

    workers = [node.worker(concurrency=2).start() for node in nodes]
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done = nodes[0].list_jobs(status=JobStatus.SUCCEEDED)
            if len(done) >= 3:
                break
            time.sleep(0.1)
    finally:
        for worker in workers:
            worker.stop()
    jobs = [j for j in nodes[0].list_jobs(limit=1000) if j.recurring_id == "tick"]
    instants = Counter(j.params[FIRE_TIME_PARAM] for j in jobs)
    assert len(jobs) >= 3
    assert max(instants.values()) == 1, f"an instant fired twice: {instants}"
    assert {j.result for j in jobs if j.status is JobStatus.SUCCEEDED} <= set(instants)


def backlog(app: Ratchet, recurring_id: str, seconds: int) -> None:
    """Pretend the schedule last fired ``seconds`` ago (every node was down since)."""
    past = app.store.database_time().replace(microsecond=0) - timedelta(seconds=seconds)
    app.store.skip_recurring_fire(recurring_id, past)


@pytest.mark.parametrize(
    ("policy", "jobs_after_first_tick"), [(Misfire.FIRE_ONCE, 1), (Misfire.SKIP, 0)]
)
def test_misfire_fire_once_and_skip(app: Ratchet, policy: str, jobs_after_first_tick: int) -> None:
    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "* * * * * *", id="r", misfire=policy)
    backlog(app, "r", 10)
    scheduler = RecurringScheduler(app._node_context(), max_sleep=1)
    scheduler.tick()
    assert len(app.list_jobs()) == jobs_after_first_tick
    last = app.store.last_recurring_fire("r")
    assert last is not None and (app.store.database_time() - last) < timedelta(seconds=2)


def test_misfire_catch_up_runs_the_latest_n_in_order(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "* * * * * *", id="r", misfire=Misfire.catch_up(3))
    backlog(app, "r", 30)
    scheduler = RecurringScheduler(app._node_context(), max_sleep=1)
    fired: list[str] = []
    for _ in range(3):
        scheduler.tick()
        [pending] = app.list_jobs(status=JobStatus.PENDING)
        fired.append(pending.params[FIRE_TIME_PARAM])
        scheduler.tick()  # the pending fire holds the business key: nothing new
        assert len(app.list_jobs(status=JobStatus.PENDING)) == 1
        app.cancel_job(pending.id)
    assert fired == sorted(fired)
    first, last = (datetime.fromisoformat(f) for f in (fired[0], fired[-1]))
    assert (last - first) == timedelta(seconds=2)  # consecutive seconds, the latest three


def test_a_single_late_instant_still_fires(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "* * * * * *", id="r", misfire=Misfire.SKIP)
    backlog(app, "r", 1)
    time.sleep(0.2)
    RecurringScheduler(app._node_context(), max_sleep=1).tick()
    assert len(app.list_jobs()) == 1


def test_only_the_lock_holder_schedules(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "* * * * * *", id="r")
    backlog(app, "r", 1)
    app.store.try_lock("ratchet:recurring-scheduler", 30, "another-node")
    assert RecurringScheduler(app._node_context(), max_sleep=1).tick() == 1
    assert app.list_jobs() == []


def test_redeploy_removes_schedules_whose_decorator_is_gone(sqlite_url: str) -> None:
    old = Ratchet(sqlite_url, **FAST)

    @old.recurring("0 3 * * *", id="legacy-cleanup")
    def legacy() -> None: ...

    @old.job
    def kept() -> None: ...

    old.schedule_recurring(kept, "0 4 * * *", id="api-made")
    RecurringScheduler(old._node_context(), max_sleep=1).sync_definitions()
    old.store.enqueue_recurring_fire(
        NewJob(
            id=new_job_id(),
            name="x",
            target="m:f",
            args_json="[]",
            kwargs_json="{}",
            business_key="legacy-cleanup",
            recurring_id="legacy-cleanup",
        ),
        fire_time=datetime(2030, 1, 1, tzinfo=UTC),
    )
    new = Ratchet(sqlite_url, **FAST)  # the next deploy: no @recurring any more
    RecurringScheduler(new._node_context(), max_sleep=1).sync_definitions()
    assert [d.id for d in new.list_recurring()] == ["api-made"]
    assert [j.status for j in new.list_jobs()] == [JobStatus.CANCELED]


def test_cancel_recurring_by_key_and_tag(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "0 1 * * *", id="a", tags=["nightly"])
    app.schedule_recurring(work, "0 2 * * *", id="b", tags=["nightly"])
    app.schedule_recurring(work, "0 3 * * *", id="c")
    assert app.cancel_recurring_by_business_key("c") == 1
    assert app.cancel_recurring_by_business_key("c") == 0
    assert app.cancel_recurring_by_tag("Nightly") == 2
    assert app.list_recurring() == []


def test_enqueue_wakes_the_poller_but_not_the_recurring_scheduler(app: Ratchet) -> None:
    """Schedules are re-read when they change, not on every enqueue (that would cost a
    scheduler pass with a lock write per job)."""

    @app.job
    def work() -> None: ...

    worker = app.worker()
    app._wakeups.attach(worker)
    work.enqueue()
    assert worker._wake.is_set() and not worker._recurring_wake.is_set()
    app.schedule_recurring(work, "0 1 * * *", id="nightly")
    assert worker._recurring_wake.is_set()
    app._wakeups.detach(worker)


@pytest.mark.parametrize(
    ("policy", "jobs_after_resume"), [(Misfire.FIRE_ONCE, 1), (Misfire.SKIP, 0)]
)
def test_a_paused_schedule_does_not_fire_and_resume_applies_the_misfire_policy(
    app: Ratchet, policy: str, jobs_after_resume: int
) -> None:
    """``app.pause_recurring``: the scheduler passes the schedule by (its instants go
    unrecorded), saving it again keeps it paused, ``list_recurring`` says so; after
    ``app.resume_recurring`` the instants missed meanwhile meet the misfire policy like
    any missed instants (fire_once: one job; skip: none, the skip recorded)."""

    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "* * * * * *", id="r", misfire=policy)
    backlog(app, "r", 10)
    app.pause_recurring("r")
    app.schedule_recurring(work, "* * * * * *", id="r", misfire=policy)  # a redeploy
    [saved] = app.list_recurring()
    assert saved.paused
    scheduler = RecurringScheduler(app._node_context(), max_sleep=1)
    before = app.store.last_recurring_fire("r")
    scheduler.tick()
    assert app.list_jobs() == []
    assert app.store.last_recurring_fire("r") == before, "a paused schedule recorded a fire"

    app.resume_recurring("r")
    assert not app.list_recurring()[0].paused
    scheduler.tick()
    assert len(app.list_jobs()) == jobs_after_resume
    last = app.store.last_recurring_fire("r")
    assert last is not None and last > before  # type: ignore[operator]


def test_pausing_an_unknown_schedule_says_what_is_saved(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    app.schedule_recurring(work, "0 2 * * *", id="nightly")
    for change in (app.pause_recurring, app.resume_recurring):
        with pytest.raises(ratchet.errors.UnknownRecurringError, match="'nightly'"):
            change("hourly")
    assert not app.list_recurring()[0].paused

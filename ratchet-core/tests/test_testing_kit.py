"""The testing kit: ``with app.testing() as t:``, its helpers and the pytest plugin."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from ratchet import (
    ArgumentsMismatchError,
    BackoffPolicy,
    JobPriority,
    JobStatus,
    Ratchet,
    RatchetError,
    current_job,
)
from ratchet.errors import UnknownJobError
from ratchet.events import JobEnqueued, JobEvent, JobFailed, JobSucceeded, RecurringFired
from ratchet.spi import NoOpClusterCoordinator
from ratchet.stores.sqlite._statements import (
    STATEMENTS,
    TEST_CLOCK_FUNCTION,
    statements_on_test_clock,
)
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.testing import RunSummary, TestClock, Testing
from ratchet.testing.session import TESTING_OPTIONS

pytest_plugins = ["pytester"]

HOUR = 3600.0


@pytest.fixture
def app() -> Iterator[Ratchet]:
    """An application on its own in-memory store (not the kit's private one)."""
    application = Ratchet("memory://", coordinator="none")
    yield application
    application.close()


class Boom(Exception):
    """A job failure a test can recognise by identity."""


# -- finding and asserting enqueued jobs -------------------------------------------------


def test_assert_enqueued_matches_arguments_after_their_json_round_trip(app: Ratchet) -> None:
    @app.job
    def ship(order: int, items: tuple[str, ...], *, express: bool = False) -> None: ...

    with app.testing() as t:
        ship.enqueue(1, ("a", "b"), express=True)
        job = t.assert_enqueued(ship, 1, ("a", "b"), express=True)  # a tuple, stored as a list
        assert job.args == (1, ["a", "b"])
        assert t.assert_enqueued(ship).id == job.id  # no arguments: any call
        t.assert_not_enqueued(ship, 1, ("a", "b"))  # kwargs differ: an exact match only
        t.assert_not_enqueued(ship, 2, ("a", "b"), express=True)
        with pytest.raises(
            AssertionError, match=r"No PENDING .*with \(2\).*PENDING .*\(1, \['a', 'b'\]"
        ):
            t.assert_enqueued(ship, 2)
        with pytest.raises(AssertionError, match="Expected no PENDING .* but found 1"):
            t.assert_not_enqueued(ship)


def test_enqueued_filters_and_orders_oldest_first(app: Ratchet) -> None:
    @app.job
    def notify(user: int) -> None: ...

    @app.job
    def other() -> None: ...

    with app.testing() as t:
        first = notify.enqueue(1)
        app.builder(notify, 2).priority(JobPriority.HIGH).tags("Mail").submit()
        app.builder(notify, 3).delay(seconds=60).business_key("user-3").submit()
        other.enqueue()
        assert t.enqueued(notify)[0].id == first
        assert [j.args for j in t.enqueued(notify)] == [(1,), (2,), (3,)]
        assert [j.args for j in t.enqueued(notify.definition.name, args=[2])] == [(2,)]
        assert [j.args for j in t.enqueued(notify, tag="mail")] == [(2,)]
        assert [j.args for j in t.enqueued(notify, priority=JobPriority.HIGH)] == [(2,)]
        assert [j.args for j in t.enqueued(notify, business_key="user-3")] == [(3,)]
        assert [j.args for j in t.enqueued(notify, business_key=None)] == [(1,), (2,)]
        assert [j.args for j in t.enqueued(notify, scheduled_after=t.now())] == [(3,)]
        assert len(t.enqueued()) == 4
        t.run()
        assert t.enqueued(notify) == [t.enqueued(notify, args=[3])[0]]  # the delayed one
        assert len(t.enqueued(notify, status=JobStatus.SUCCEEDED)) == 2
        assert len(t.enqueued(notify, status=None)) == 3


def test_an_unknown_job_name_is_an_error_not_nothing_enqueued(app: Ratchet) -> None:
    """A typo must not make assert_not_enqueued pass vacuously."""
    with app.testing() as t, pytest.raises(UnknownJobError, match="'sned_receipt'"):
        t.assert_not_enqueued("sned_receipt")


# -- run(): the real engine ----------------------------------------------------------------


def test_run_goes_through_the_real_engine(app: Ratchet) -> None:
    """Events, the stored JSON result, callbacks and the job context are the real ones."""
    seen: list[JobEvent] = []
    results: list[object] = []
    app.on(JobSucceeded, seen.append)
    app.on(JobEnqueued, seen.append)

    def done(result: Any) -> None:
        results.append(result.value)

    @app.job(on_success=done)
    def total(prices: list[float]) -> tuple[float, int]:
        assert current_job().attempt == 1
        return (sum(prices), len(prices))

    with app.testing() as t:
        job_id = total.enqueue([1.5, 2.5])
        summary = t.run()
        job = app.get_job(job_id)
        assert job is not None
        stamped = {event.at for event in seen}
        assert stamped == {t.now()}  # events carry the test clock's time exactly
    assert summary == RunSummary(ran=1, succeeded=1, retried=0, dead_lettered=0)
    assert job.status is JobStatus.SUCCEEDED
    assert job.result == [4.0, 2]  # the JSON round trip: a tuple comes back a list
    assert [type(event) for event in seen] == [JobEnqueued, JobSucceeded]
    assert results == [[4.0, 2]]


def test_run_skips_backoff_and_counts_every_attempt(app: Ratchet) -> None:
    attempts: list[int] = []

    @app.job(max_retries=3, backoff=BackoffPolicy.FIXED, backoff_ms=int(HOUR * 1000))
    def flaky() -> str:
        attempts.append(current_job().attempt)
        if len(attempts) < 3:
            raise Boom("not yet")
        return "ok"

    with app.testing() as t:
        job_id = flaky.enqueue()
        summary = t.run(raise_errors=False)
        job = app.get_job(job_id)
        assert job is not None
        assert len(app.executions(job_id)) == 3
    assert attempts == [1, 2, 3]
    assert summary == RunSummary(ran=3, succeeded=1, retried=2, dead_lettered=0)
    assert (job.status, job.attempts, job.result) == (JobStatus.SUCCEEDED, 3, "ok")


def test_backoff_would_hold_the_retry_without_the_kit(app: Ratchet) -> None:
    """Negative control for the test above: the engine's own run (with backoff) leaves
    the hour-long retry PENDING; only t.run() makes it due at once."""

    @app.job(max_retries=3, backoff=BackoffPolicy.FIXED, backoff_ms=int(HOUR * 1000))
    def failing() -> None:
        raise Boom("always")

    with app.testing() as t:
        job_id = failing.enqueue()
        assert app.run_until_idle(wait_for_retries=False) == 1
        job = app.get_job(job_id)
        assert job is not None
        assert job.status is JobStatus.PENDING
        assert round((job.scheduled_at - t.now()).total_seconds()) == HOUR
        assert t.run(raise_errors=False).ran == 0  # written with backoff: not due yet
        t.advance(HOUR)
        t.run(raise_errors=False)  # from here on, retries are due at once
        job = app.get_job(job_id)
        assert job is not None
        assert (job.status, job.attempts) == (JobStatus.FAILED, 4)


def test_raise_errors_reraises_the_first_failure_after_recording_it(app: Ratchet) -> None:
    raised: list[Boom] = []
    failed_events: list[JobFailed] = []
    app.on(JobFailed, failed_events.append)

    @app.job(max_retries=1)
    def charge(amount: int) -> None:
        error = Boom(f"card declined for {amount}")
        raised.append(error)
        raise error

    @app.job(priority=JobPriority.LOW)
    def after() -> None: ...

    with app.testing() as t:
        job_id = charge.enqueue(5)
        after.enqueue()
        with pytest.raises(Boom) as caught:
            t.run()
        assert caught.value is raised[0]  # the job's own exception object
        job = app.get_job(job_id)
        assert job is not None
        # Recorded first: the retry is written (due at once) and JobFailed was emitted.
        assert (job.status, job.attempts) == (JobStatus.PENDING, 1)
        assert "card declined for 5" in (job.last_error or "")
        assert [event.will_retry for event in failed_events] == [True]
        t.assert_enqueued(after)  # the run stopped at the failure
        with pytest.raises(Boom):
            t.run()  # the retry: attempts exhausted, dead-lettered, raised again
        job = app.get_job(job_id)
        assert job is not None
        assert job.status is JobStatus.FAILED
        t.assert_enqueued(after)


def test_raise_errors_false_runs_everything_and_keeps_failures_in_the_store(app: Ratchet) -> None:
    @app.job(max_retries=0)
    def broken() -> None:
        raise Boom("broken")

    @app.job
    def fine() -> None: ...

    with app.testing() as t:
        broken_id = broken.enqueue()
        fine.enqueue()
        summary = t.run(raise_errors=False)
        job = app.get_job(broken_id)
        assert job is not None
    assert summary == RunSummary(ran=2, succeeded=1, retried=0, dead_lettered=1)
    assert job.status is JobStatus.FAILED


def test_run_runs_what_jobs_enqueue(app: Ratchet) -> None:
    ran: list[int] = []

    @app.job
    def countdown(n: int) -> None:
        ran.append(n)
        if n:
            countdown.enqueue(n - 1)

    with app.testing() as t:
        countdown.enqueue(3)
        assert t.run().ran == 4
    assert ran == [3, 2, 1, 0]


def test_scheduled_jobs_wait_for_the_clock_or_include_scheduled(app: Ratchet) -> None:
    ran: list[str] = []

    @app.job
    def remind(what: str) -> None:
        ran.append(what)

    with app.testing() as t:
        start = t.now()
        app.builder(remind, "in an hour").delay(seconds=HOUR).submit()
        app.builder(remind, "tomorrow").delay(timedelta(days=1)).submit()
        assert t.run().ran == 0  # the clock stands still: nothing is due
        assert t.now() == start
        t.advance(HOUR - 1)
        assert t.run().ran == 0
        t.advance(1)
        assert t.run().ran == 1
        assert ran == ["in an hour"]
        assert t.run(include_scheduled=True).ran == 1
        assert ran == ["in an hour", "tomorrow"]
        moved = t.now() - start  # as far as needed (to the microsecond)
        assert timedelta(days=1) <= moved <= timedelta(days=1, milliseconds=1)


def test_cron_fires_when_the_clock_reaches_the_instant(app: Ratchet) -> None:
    fired: list[RecurringFired] = []
    app.on(RecurringFired, fired.append)
    ran: list[str] = []

    @app.recurring("*/15 * * * *", id="quarterly")
    def tick() -> None:
        ran.append(current_job().param("ratchet.fire_time"))

    with app.testing() as t:
        assert t.run().ran == 0  # saved at the start of the block; nothing due yet
        t.advance(timedelta(minutes=15))
        assert t.run().ran == 1
        assert t.run().ran == 0  # one fire per instant
        assert len(ran) == 1
        assert len(fired) == 1
        assert fired[0].fire_time <= t.now()


def test_cron_does_not_fire_while_the_clock_stands_still(app: Ratchet) -> None:
    """Negative control for the test above: without advance() no instant is reached."""

    @app.recurring("*/15 * * * *", id="quarterly")
    def tick() -> None: ...

    with app.testing() as t:
        assert t.run().ran == 0
        assert t.run(include_scheduled=True).ran == 0


def test_advance_refuses_to_go_back(app: Ratchet) -> None:
    with app.testing() as t:
        before = t.now()
        with pytest.raises(ValueError, match="only moves forward"):
            t.advance(-1)
        with pytest.raises(ValueError, match="finite"):
            t.advance(float("nan"))
        assert t.now() == before
        assert t.advance(timedelta(seconds=90)) - before == timedelta(seconds=90)


def test_a_worker_in_the_block_runs_on_the_private_store(app: Ratchet) -> None:
    @app.job
    def double(n: int) -> int:
        return n * 2

    with app.testing() as t:
        job_id = double.enqueue(21)
        with app.worker():
            assert double.result(job_id, timeout=10) == 42
        assert t.enqueued(double, status=JobStatus.SUCCEEDED)[0].id == job_id


def test_advance_makes_a_delayed_job_due_on_a_running_worker(app: Ratchet) -> None:
    @app.job
    def later() -> str:
        return "done"

    with app.testing() as t, app.worker():
        job_id = app.builder(later).delay(seconds=HOUR).submit()
        with pytest.raises(TimeoutError):
            app.wait_for(job_id, timeout=0.3)  # the worker polls, but it is not due
        t.advance(HOUR)
        assert later.result(job_id, timeout=10) == "done"


# -- perform(): one body, nothing stored ---------------------------------------------------


def test_perform_calls_the_body_in_a_real_job_context_and_stores_nothing(app: Ratchet) -> None:
    @app.job
    def welcome(user: dict[str, Any], *, tries: tuple[int, ...] = ()) -> dict[str, Any]:
        job = current_job()
        job.logger.info("welcoming %s", user["name"])
        return {
            "attempt": job.attempt,
            "source": job.param("source"),
            "user": user,
            "tries": tries,
            "id": job.id,
        }

    with app.testing() as t:
        result = t.perform(
            welcome, {"name": "ada"}, tries=(1, 2), attempt=3, params={"source": "signup"}
        )
        assert result["attempt"] == 3
        assert result["source"] == "signup"
        assert result["tries"] == [1, 2]  # the arguments made the JSON round trip
        assert result["id"]
        assert t.enqueued(status=None) == []
        with pytest.raises(ArgumentsMismatchError):
            t.perform(welcome)
        with pytest.raises(ValueError, match="attempt must be"):
            t.perform(welcome, {"name": "x"}, attempt=0)
    with pytest.raises(RuntimeError, match="outside a running job"):
        current_job()  # the context was reset


def test_perform_raises_what_the_body_raises(app: Ratchet) -> None:
    @app.job
    def explode() -> None:
        raise Boom("bang")

    with app.testing() as t, pytest.raises(Boom, match="bang"):
        t.perform(explode)


def test_perform_runs_async_jobs(app: Ratchet) -> None:
    @app.job
    async def fetch(n: int) -> int:
        await asyncio.sleep(0)
        return n + current_job().attempt

    with app.testing() as t:
        assert t.perform(fetch, 1, attempt=2) == 3
        assert asyncio.run(t.perform_async(fetch, 1)) == 2


# -- the swap: in and out, and the configured store untouched ------------------------------


def _state(app: Ratchet) -> dict[str, object]:
    return {
        "store": app.store,
        "store_url": app.store_url,
        "coordinator": app.coordinator,
        "coordinator_reason": app.coordinator_reason,
        "startup": app.startup,
        "options": app.options,
        "clock": app.observers.clock,
        "job_ended": app.observers.job_ended,
    }


def test_the_block_swaps_everything_and_puts_it_back(app: Ratchet) -> None:
    before = _state(app)
    with app.testing() as t:
        inside = _state(app)
        assert isinstance(app.store, SQLiteJobStore)
        assert app.store is t.store
        assert app.store_url == "memory://"
        assert app.companion_store() is t.store
        assert isinstance(app.coordinator, NoOpClusterCoordinator)
        assert app.options.poll_burst_seconds == TESTING_OPTIONS["poll_burst_seconds"]
        assert app.observers.clock.now() == t.now()
        for name, value in before.items():
            if name != "job_ended":  # None both before and inside here
                assert inside[name] is not value, name
    after = _state(app)
    for name, value in before.items():
        assert after[name] is value, name
    with pytest.raises(RatchetError, match="not in its block"):
        t.enqueued()


def test_the_block_puts_everything_back_when_it_raises(app: Ratchet) -> None:
    before = _state(app)
    with pytest.raises(Boom), app.testing() as t:
        private = t.store
        raise Boom("inside")
    assert _state(app) == before
    assert all(_state(app)[name] is value for name, value in before.items())
    with pytest.raises(RatchetError, match="closed"):
        private.database_time()  # the private store is closed with the block


def test_a_second_block_on_one_app_is_refused(app: Ratchet) -> None:
    with app.testing(), pytest.raises(RatchetError, match="already in a testing block"):
        app.testing().__enter__()
    with app.testing():  # and the app is free again afterwards
        pass


def _rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the SQLite file, read on a connection of our own."""
    with sqlite3.connect(path) as conn:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in tables
        }


@pytest.fixture
def file_app(tmp_path: Path) -> Iterator[tuple[Ratchet, Path]]:
    path = tmp_path / "configured.db"
    application = Ratchet(f"sqlite:///{path}", coordinator="none")
    yield application, path
    application.close()


def test_the_configured_sqlite_file_is_never_touched_inside_the_block(
    file_app: tuple[Ratchet, Path],
) -> None:
    app, path = file_app

    @app.job(max_retries=1)
    def work(n: int) -> int:
        if n < 0:
            raise Boom("negative")
        return n

    @app.recurring("0 * * * *", id="hourly")
    def hourly() -> None: ...

    existing = work.enqueue(1)  # on the configured store, before the block
    configured = app.store
    assert isinstance(configured, SQLiteJobStore)
    statements: list[str] = []
    configured._conn.set_trace_callback(statements.append)  # every statement it runs
    before = _rows(path)
    with app.testing() as t:
        assert t.enqueued(work) == []  # the configured store's job is not in here
        assert app.get_job(existing) is None
        work.enqueue(2)
        work.enqueue(-1)
        app.builder(work, 3).delay(seconds=60).submit()
        t.run(raise_errors=False)
        t.advance(HOUR)
        t.run(include_scheduled=True, raise_errors=False)
        t.perform(work, 4)
        with app.worker():
            assert work.result(work.enqueue(5), timeout=10) == 5
        app.cancel_job(work.enqueue(6))
    configured._conn.set_trace_callback(None)
    assert statements == []
    assert _rows(path) == before
    assert app.get_job(existing) is not None  # and it is the configured store again


def test_the_row_snapshot_notices_a_write(file_app: tuple[Ratchet, Path]) -> None:
    """Negative control for the test above: the same snapshot sees an enqueue."""
    app, path = file_app

    @app.job
    def work(n: int) -> int:
        return n

    before = _rows(path)
    work.enqueue(1)
    assert _rows(path) != before


# -- the SQLite store's test clock ---------------------------------------------------------


def test_every_statement_on_the_test_clock_reads_that_clock_only() -> None:
    on_clock = statements_on_test_clock()
    assert set(on_clock) == set(STATEMENTS)
    for name in on_clock:
        assert "julianday" not in on_clock[name], name  # no statement left on SQLite's clock
        assert TEST_CLOCK_FUNCTION not in STATEMENTS[name], name  # production never calls it
    assert on_clock["now"] != STATEMENTS["now"]


def test_the_store_on_a_test_clock_writes_its_times() -> None:
    clock = TestClock(start=1_000_000.0)
    store = SQLiteJobStore(None)
    try:
        store.use_test_clock(clock.read)
        assert store.database_time() == clock.now()
        app = Ratchet(store, coordinator="none")

        @app.job
        def noop() -> None: ...

        job = app.get_job(noop.enqueue())
        assert job is not None
        assert job.created_at == job.scheduled_at == clock.now()
        clock.advance(5)
        assert store.database_time() == clock.now()
        store.use_test_clock(None)
        assert store.database_time() > clock.now()  # back on SQLite's own clock
    finally:
        store.close()


def test_a_test_clock_on_one_instance_leaves_others_on_the_real_clock() -> None:
    first = SQLiteJobStore(None, memory_name="clock-sharing")
    second = SQLiteJobStore(None, memory_name="clock-sharing")
    try:
        first.use_test_clock(TestClock(start=0.0).read)
        assert first.database_time().year == 1970
        assert second.database_time().year > 2000
    finally:
        first.close()
        second.close()


def test_options_in_the_block_keep_the_applications_other_values() -> None:
    application = Ratchet("memory://", coordinator="none", concurrency=3)
    try:
        outside = application.options
        with application.testing():
            inside = application.options
        changed = {
            field.name
            for field in dataclasses.fields(outside)
            if getattr(inside, field.name) != getattr(outside, field.name)
        }
        assert inside.concurrency == 3
        assert changed <= {*TESTING_OPTIONS, "store_url", "coordinator"}
        assert application.options is outside
    finally:
        application.close()


# -- the pytest plugin ---------------------------------------------------------------------


def test_the_plugin_is_registered_under_pytest11() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("ratchet") == "ratchet.testing.pytest_plugin"


def test_the_plugin_fixtures_give_a_fresh_app_in_a_testing_block(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            from ratchet import Ratchet
            from ratchet.testing import Testing

            def test_jobs(ratchet_app, ratchet_testing):
                assert isinstance(ratchet_app, Ratchet)
                assert isinstance(ratchet_testing, Testing)
                assert ratchet_testing.app is ratchet_app

                @ratchet_app.job
                def add(a, b):
                    return a + b

                job_id = add.enqueue(1, 2)
                ratchet_testing.assert_enqueued(add, 1, 2)
                assert ratchet_testing.run().succeeded == 1
                assert ratchet_app.get_job(job_id).result == 3

            def test_fresh_each_time(ratchet_app, ratchet_testing):
                assert ratchet_app.registry == {}
                assert ratchet_testing.enqueued(status=None) == []
            """
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_the_plugin_can_be_turned_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_needs_it(ratchet_app):\n    pass\n")
    result = pytester.runpytest("-p", "no:ratchet", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'ratchet_app' not found*"])


def test_the_plugin_adds_no_options(pytester: pytest.Pytester) -> None:
    with_plugin = pytester.runpytest("--help").stdout.str()
    without = pytester.runpytest("-p", "no:ratchet", "--help").stdout.str()
    assert with_plugin == without


def test_importing_the_plugin_imports_no_engine() -> None:
    code = (
        "import sys, ratchet.testing.pytest_plugin\n"
        "heavy = [m for m in sys.modules if m.startswith(('ratchet._engine.worker', "
        "'ratchet.testing.session', 'ratchet.stores.sqlite'))]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def test_the_docs_page_examples_pass_as_written(pytester: pytest.Pytester) -> None:
    """docs/testing.md: every python block is a file (``# name.py`` first); together they
    are an application and its pytest modules, whose tests must all pass."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS_PAGE.read_text(), re.M | re.S)
    assert len(blocks) >= 5
    tests = 0
    for block in blocks:
        name = re.match(r"# (\w+\.py)\n", block)
        assert name, f"docs/testing.md: a python block must start with '# NAME.py':\n{block}"
        pytester.path.joinpath(name[1]).write_text(block)
        tests += len(re.findall(r"^def test_", block, re.M))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=tests)
    with sqlite3.connect(pytester.path / "shop.db") as conn:  # the app's configured file
        tables = conn.execute("SELECT name FROM sqlite_master WHERE name = 'ratchet_job'")
        if tables.fetchall():
            assert conn.execute("SELECT COUNT(*) FROM ratchet_job").fetchone() == (0,)


def test_the_testing_package_names_resolve_lazily() -> None:
    import ratchet.testing

    assert ratchet.testing.Testing is Testing
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ratchet.testing.Nope  # noqa: B018


def test_a_snooze_waits_for_the_test_clock_and_uses_no_attempt(app: Ratchet) -> None:
    """A job that snoozes for a minute is PENDING after ``t.run()`` (the clock stands
    still), runs again once ``t.advance(60)`` makes it due, and succeeds on its first
    attempt: a snooze is no retry, so the kit's skipped backoff does not apply to it."""
    from ratchet import Snooze

    runs: list[int] = []

    @app.job(max_retries=0)
    def patient() -> str:
        runs.append(current_job().attempt)
        if len(runs) == 1:
            raise Snooze(60)
        return "done"

    with app.testing() as t:
        job_id = patient.enqueue()
        first = t.run()
        assert app.get_job(job_id).status is JobStatus.PENDING  # type: ignore[union-attr]
        t.advance(60)
        second = t.run()
        job = app.get_job(job_id)
    assert runs == [1, 1]
    assert first == RunSummary(ran=1, succeeded=0, retried=0, dead_lettered=0)
    assert second == RunSummary(ran=1, succeeded=1, retried=0, dead_lettered=0)
    assert job is not None and (job.status, job.attempts) == (JobStatus.SUCCEEDED, 1)

"""Bad input: a clear error naming the value and the fix, and nothing half-written.

The catalogue (``JOB_INPUTS``, ``CONFIGURATION_INPUTS``, ``CLI_INPUTS``) lists each bad
input with the error class and a fragment of its message. Each job input is tried against
an application whose embedded worker is running: the call must fail, write nothing to the
store, keep its message bounded, and leave the worker running a good job afterwards.
When a row fails, read the message the call raised: it must name the value and the fix.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
import signal
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ratchet
from conftest import FAST
from ratchet import BackoffPolicy, JobStatus, Ratchet, RatchetOptions
from ratchet._engine.polling import AdaptivePolling
from ratchet._engine.recurring import RecurringScheduler
from ratchet.cli import main
from ratchet.errors import (
    ArgumentsMismatchError,
    ArgumentsNotSerializableError,
    BusinessKeyConflictError,
    ConfigurationError,
    DuplicateIdempotencyKeyError,
    InvalidCronError,
    InvalidStoreURLError,
    PayloadTooLargeError,
    StoreUnavailableError,
    UnknownStoreError,
    ValueOutOfRangeError,
    WorkerCrashedError,
)
from ratchet.spi import NewJob, RetryPolicy, new_job_id
from ratchet.stores.sqlite.store import SQLiteJobStore

UTC = dt.UTC
MAX_MESSAGE = 1000  # every message quoting a value stays well under this


@dataclasses.dataclass
class Subject:
    """An application with a running embedded worker and two registered jobs."""

    app: Ratchet
    worker: Any
    work: Any  # work(order_id: int, note: str = "") -> int
    anything: Any  # anything(*args, **kwargs) -> str


@pytest.fixture
def subject() -> Iterator[Subject]:
    app = Ratchet("memory://", **FAST)

    @app.job(name="work")
    def work(order_id: int, note: str = "") -> int:
        return order_id

    @app.job(name="anything")
    def anything(*args: object, **kwargs: object) -> str:
        return "ok"

    worker = app.worker(concurrency=2).start()
    yield Subject(app=app, worker=worker, work=work, anything=anything)
    worker.stop(timeout=5)
    app.close()


def wait_for(app: Ratchet, job_id: str, status: JobStatus, within: float = 30.0) -> None:
    """Wait (a bound, not a timing assertion) until the job reaches ``status``."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        job = app.get_job(job_id)
        if job is not None and job.status is status:
            return
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} is {app.get_job(job_id)!r}, never {status}")


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _recurring_needs_an_argument(s: Subject) -> None:
    @s.app.recurring("0 3 * * *", id="needs-argument")
    def nightly(day: str) -> None: ...


def _recurring_never_fires(s: Subject) -> None:
    @s.app.recurring("0 0 30 2 *", id="february-30")
    def never() -> None: ...


Call = Callable[[Subject], object]

# (id, the bad call, error class, fragment of its message)
JOB_INPUTS: list[tuple[str, Call, type[Exception], str]] = [
    # 8. times: delays, scheduled times, timeouts, back-off and retry counts
    (
        "delay-1e12",
        lambda s: s.work.builder(1).delay(seconds=1e12),
        ValueOutOfRangeError,
        "Delay 1000000000000.0 s is longer than 10 years",
    ),
    (
        "delay-inf",
        lambda s: s.work.builder(1).delay(seconds=float("inf")),
        ValueOutOfRangeError,
        "Delay inf s is not a finite number",
    ),
    (
        "delay-nan",
        lambda s: s.work.builder(1).delay(float("nan")),
        ValueOutOfRangeError,
        "Delay nan s is not a finite number",
    ),
    (
        "delay-negative",
        lambda s: s.work.builder(1).delay(seconds=-1),
        ValueOutOfRangeError,
        "Delay -1 s is negative; use a delay from 0 to",
    ),
    (
        "delay-timedelta-30-years",
        lambda s: s.work.builder(1).delay(dt.timedelta(days=30 * 365)),
        ValueOutOfRangeError,
        "longer than 10 years",
    ),
    (
        "delay-huge-int",
        lambda s: s.work.builder(1).delay(seconds=10**400),
        ValueOutOfRangeError,
        "longer than 10 years",
    ),
    (
        "delay-text",
        lambda s: s.work.builder(1).delay("soon"),  # type: ignore[arg-type]
        ValueOutOfRangeError,
        "Delay 'soon' is not a number of seconds",
    ),
    (
        "at-after-9999-in-utc",
        lambda s: s.work.builder(1).at(
            dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
        ),
        ValueOutOfRangeError,
        "outside the range Ratchet stores, 1970-01-01 to 9999-12-30 UTC",
    ),
    (
        "at-year-1",
        lambda s: s.work.builder(1).at(dt.datetime(1, 1, 1, tzinfo=UTC)),
        ValueOutOfRangeError,
        "outside the range",
    ),
    (
        "at-before-1970",
        lambda s: s.work.builder(1).at(dt.datetime(1969, 12, 31, tzinfo=UTC)),
        ValueOutOfRangeError,
        "outside the range",
    ),
    (
        "at-naive",
        lambda s: s.work.builder(1).at(dt.datetime(2030, 1, 1)),
        ValueOutOfRangeError,
        "needs a timezone-aware datetime",
    ),
    (
        "at-text",
        lambda s: s.work.builder(1).at("2030-01-01"),  # type: ignore[arg-type]
        ValueOutOfRangeError,
        "needs a timezone-aware datetime, got '2030-01-01'",
    ),
    (
        "timeout-inf",
        lambda s: s.app.job(name="t", timeout=float("inf"))(lambda: None),
        ValueOutOfRangeError,
        "Job timeout inf must be a number of seconds above 0 and at most 2592000",
    ),
    (
        "timeout-1e12",
        lambda s: s.app.job(name="t", timeout=1e12)(lambda: None),
        ValueOutOfRangeError,
        "Job timeout 1000000000000.0",
    ),
    (
        "timeout-nan",
        lambda s: s.app.job(name="t", timeout=float("nan"))(lambda: None),
        ValueOutOfRangeError,
        "Job timeout nan",
    ),
    (
        "timeout-zero",
        lambda s: s.app.job(name="t", timeout=0)(lambda: None),
        ValueOutOfRangeError,
        "Job timeout 0",
    ),
    (
        "recurring-timeout-inf",
        lambda s: s.app.recurring("0 3 * * *", name="r", timeout=float("inf"))(lambda: None),
        ValueOutOfRangeError,
        "Job timeout inf",
    ),
    (
        "max-retries-huge",
        lambda s: s.app.job(name="t", max_retries=10**30)(lambda: None),
        ValueOutOfRangeError,
        "max_retries is 1000000000000000000000000000000; it must be a whole number from 0 to",
    ),
    (
        "backoff-ms-huge",
        lambda s: s.app.job(name="t", backoff_ms=10**20)(lambda: None),
        ValueOutOfRangeError,
        "backoff_ms is 100000000000000000000; it must be a whole number from 0 to 86400000",
    ),
    (
        "builder-max-retries-negative",
        lambda s: s.work.builder(1).max_retries(-1),
        ValueOutOfRangeError,
        "max_retries is -1",
    ),
    (
        "builder-backoff-ms-huge",
        lambda s: s.work.builder(1).backoff(BackoffPolicy.FIXED, ms=10**12),
        ValueOutOfRangeError,
        "backoff ms is 1000000000000",
    ),
    # 10. cron expressions that parse but never fire
    ("cron-february-30", _recurring_never_fires, InvalidCronError, "'0 0 30 2 *' never fires"),
    (
        "cron-april-31",
        lambda s: s.app.schedule_recurring(s.anything, "0 0 31 4 *", id="april-31"),
        InvalidCronError,
        "'0 0 31 4 *' never fires",
    ),
    (
        "cron-31-in-short-months",
        lambda s: s.app.schedule_recurring(s.anything, "0 0 31 2,4,6 *", id="short"),
        InvalidCronError,
        "never fires",
    ),
    # 11. arguments that do not match the signature, or cannot be encoded
    (
        "args-missing",
        lambda s: s.work.enqueue(),
        ArgumentsMismatchError,
        "Job 'work' takes (order_id: 'int', note: 'str' = '') -> 'int' but was given (): "
        "missing a required argument: 'order_id'",
    ),
    (
        "args-too-many",
        lambda s: s.work.enqueue(1, "a", "b"),
        ArgumentsMismatchError,
        "given (1, 'a', 'b'): too many positional arguments",
    ),
    (
        "args-unknown-keyword",
        lambda s: s.work.enqueue(1, colour="red"),
        ArgumentsMismatchError,
        "got an unexpected keyword argument 'colour'",
    ),
    (
        "args-builder",
        lambda s: s.work.builder(note="x").submit(),
        ArgumentsMismatchError,
        "missing a required argument: 'order_id'",
    ),
    (
        "args-enqueue-many-one-bad",
        lambda s: s.app.enqueue_many(s.work, [(1,), (2,), ()]),
        ArgumentsMismatchError,
        "missing a required argument",
    ),
    (
        "args-by-job-name",
        lambda s: s.app.enqueue("work", 1, 2, 3),
        ArgumentsMismatchError,
        "too many positional arguments",
    ),
    (
        "args-schedule-recurring",
        lambda s: s.app.schedule_recurring(s.work, "0 3 * * *", id="r", args=[1, 2, 3]),
        ArgumentsMismatchError,
        "too many positional arguments",
    ),
    (
        "args-recurring-decorator",
        _recurring_needs_an_argument,
        ArgumentsMismatchError,
        "missing a required argument: 'day'",
    ),
    (
        "args-huge-mismatch-is-bounded",
        lambda s: s.work.enqueue("x" * 1_000_000, "y", "z"),
        ArgumentsMismatchError,
        "too many positional arguments",
    ),
    (
        "huge-int",
        lambda s: s.work.enqueue(10**5000),
        ArgumentsNotSerializableError,
        "Positional argument 0 of job 'work' is <int of about 5000 digits> of type 'int'",
    ),
    (
        "huge-int-nested",
        lambda s: s.anything.enqueue(key=[1, {"n": 10**5000}]),
        ArgumentsNotSerializableError,
        "Keyword argument 'key' of job 'anything' is [1, {'n': <int of about 5000 digits>}]",
    ),
    (
        "huge-set-is-bounded",
        lambda s: s.anything.enqueue(set(range(100_000))),
        ArgumentsNotSerializableError,
        "is {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...} of type 'set'",
    ),
    (
        "huge-string-beside-a-set-is-bounded",
        lambda s: s.anything.enqueue({"blob": "x" * 1_000_000, "bad": {1}}),
        ArgumentsNotSerializableError,
        "of type 'dict', which cannot be stored as JSON",
    ),
    (
        "nested-100000-deep",
        lambda s: s.anything.enqueue(nested(100_000)),
        ArgumentsNotSerializableError,
        "maximum recursion depth exceeded",
    ),
    (
        "nan-argument",
        lambda s: s.anything.enqueue(float("nan")),
        ArgumentsNotSerializableError,
        "nan",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [pytest.param(call, error, fragment, id=name) for name, call, error, fragment in JOB_INPUTS],
)
def test_bad_job_input_is_refused_and_the_worker_keeps_running(
    subject: Subject, call: Call, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error) as info:
        call(subject)
    message = str(info.value)
    assert fragment in message
    assert len(message) <= MAX_MESSAGE, f"{len(message)} characters: {message[:300]}…"
    assert isinstance(info.value, ratchet.RatchetError)
    assert subject.app.list_jobs(limit=1000) == []  # nothing was written
    assert subject.app.list_recurring() == []
    # The running worker still runs a good job afterwards.
    good = subject.work.enqueue(7)
    wait_for(subject.app, good, JobStatus.SUCCEEDED)
    assert subject.worker.crash is None


def test_good_times_at_the_edges_are_accepted(subject: Subject) -> None:
    """The bounds are not off by one: the extremes of each range are stored and read."""
    builder = subject.work.builder(1)
    last = builder.at(dt.datetime(9999, 12, 30, tzinfo=UTC)).submit()
    ten_years = subject.work.builder(2).delay(seconds=10 * 365 * 86400).submit()
    subject.app.job(name="long", timeout=30 * 86400, max_retries=10_000)(lambda: None)
    assert {job.id for job in subject.app.list_jobs()} == {last, ten_years}
    assert subject.app.get_job(last).scheduled_at.year == 9999  # type: ignore[union-attr]


class _ForeverPolicy(RetryPolicy):
    """A user RetryPolicy asking for a delay no store can hold."""

    def should_retry(self, attempt: int, cause: BaseException) -> bool:
        return True

    def get_delay(self, attempt: int) -> float:
        return float("inf")


def test_a_retry_policy_delay_out_of_range_falls_back_to_the_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = Ratchet("memory://", retry_policy=_ForeverPolicy(), **FAST)
    calls: list[int] = []

    @app.job(name="flaky", backoff=BackoffPolicy.NONE)
    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")
        return "ok"

    job_id = flaky.enqueue()
    app.run_until_idle(timeout=30)
    assert app.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    assert "RetryPolicy.get_delay returned inf" in caplog.text
    app.close()


# -- configuration ------------------------------------------------------------------------

CONFIGURATION_INPUTS = [
    ("RATCHET_WORKER_CONCURRENCY", "-2", "must be >= 1 and <= 1000"),
    ("RATCHET_WORKER_CONCURRENCY", "many", "not a whole number"),
    ("RATCHET_WORKER_CONCURRENCY", "100000", "must be >= 1 and <= 1000"),
    ("RATCHET_WORKER_CONCURRENCY", "inf", "not a whole number"),
    ("RATCHET_POLL_IDLE_MAX_SECONDS", "soon", "not a number"),
    ("RATCHET_POLL_BURST_SECONDS", "inf", "must be >= 0.01 and <= 3600"),
    ("RATCHET_POLL_BURST_SECONDS", "nan", "must be >= 0.01 and <= 3600"),
    ("RATCHET_POLL_BURST_SECONDS", "1e400", "must be >= 0.01 and <= 3600"),
    ("RATCHET_ORPHAN_SCAN_INTERVAL_MINUTES", "inf", "must be >= 0.0001 and <= 1440"),
    ("RATCHET_RECURRING_POLL_MAX_SECONDS", "inf", "must be >= 0.01 and <= 3600"),
    ("RATCHET_NODE_ORPHAN_GRACE_SECONDS", "-1", "must be >= 0.01"),
    ("RATCHET_MAX_PAYLOAD_KB", "nan", "must be >="),
    ("RATCHET_MAX_PAYLOAD_KB", "inf", "must be >= 0.001 and <= 1048576"),
    ("RATCHET_JOB_RETENTION_DAYS", "1e9", "must be >= 0 and <= 3650"),
    ("RATCHET_JOB_ARCHIVER_CRON", "0 0 30 2 *", "never fires"),
]


@pytest.mark.parametrize(("variable", "value", "message"), CONFIGURATION_INPUTS)
def test_invalid_configuration_values(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=re.escape(message)) as info:
        Ratchet("memory://")
    assert variable in str(info.value) and repr(value) in str(info.value)


NUMERIC_OPTIONS = [
    spec for spec in dataclasses.fields(RatchetOptions) if spec.metadata["kind"] in ("int", "float")
]


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "1e300"])
@pytest.mark.parametrize("spec", NUMERIC_OPTIONS, ids=[s.name for s in NUMERIC_OPTIONS])
def test_every_number_option_has_a_finite_range(
    monkeypatch: pytest.MonkeyPatch, spec: dataclasses.Field[Any], raw: str
) -> None:
    """Every numeric option refuses infinities, NaN and absurd values, by variable and by
    keyword; the message names the variable (or option) and the range."""
    variable = spec.metadata["env"]
    monkeypatch.setenv(variable, raw)
    with pytest.raises(ConfigurationError, match=re.escape(variable)) as info:
        RatchetOptions.from_env()
    assert "<=" in str(info.value)  # the range is in the message
    monkeypatch.delenv(variable)
    with pytest.raises(ConfigurationError, match=f"option '{spec.name}'"):
        RatchetOptions.from_env(**{spec.name: float(raw)})


def test_invalid_keyword_options() -> None:
    with pytest.raises(ConfigurationError, match="option 'concurrency' is 0"):
        Ratchet("memory://", concurrency=0)
    with pytest.raises(ConfigurationError, match="option 'concurrency' is inf"):
        Ratchet("memory://", concurrency=float("inf"))
    with pytest.raises(ConfigurationError, match="Unknown Ratchet option.*'concurency'"):
        Ratchet("memory://", concurency=4)


@pytest.mark.parametrize("concurrency", [0, -1, 100_000, 2.5])
def test_worker_concurrency_is_checked_not_defaulted(app: Ratchet, concurrency: Any) -> None:
    """``concurrency=0`` used to mean the default (8) silently, 100000 a traceback."""
    with pytest.raises(ConfigurationError, match=r"Worker concurrency is .*>= 1 and <= 1000"):
        app.worker(concurrency=concurrency)
    with pytest.raises(ConfigurationError, match="Worker concurrency"):
        app.run_until_idle(concurrency=concurrency)
    assert app.worker(concurrency=1).concurrency == 1


# -- the command line ---------------------------------------------------------------------

CLI_INPUTS = [
    (["enqueue", "m:app", "work", "--delay", "inf"], "argument --delay: 'inf' is not a number"),
    (["enqueue", "m:app", "work", "--delay", "1e12"], "from 0 to 315360000"),
    (["enqueue", "m:app", "work", "--delay", "-5"], "from 0 to 315360000"),
    (["dlq", "purge", "--older-than-days", "nan"], "argument --older-than-days: 'nan'"),
    (["dlq", "purge", "--older-than-days", "-1"], "not a number from 0 to 3650"),
    (["worker", "m:app", "--concurrency", "0"], "'0' is not a whole number from 1 to 1000"),
    (["worker", "m:app", "--concurrency", "100000"], "'100000' is not a whole number"),
    (["jobs", "list", "--limit", "-1"], "argument --limit: '-1' is not a whole number"),
    (["dlq", "list", "--limit", "lots"], "argument --limit: 'lots'"),
    (["bench", "--store", "memory://", "--concurrency", "0"], "argument --concurrency: '0'"),
]


@pytest.mark.parametrize(("argv", "fragment"), CLI_INPUTS, ids=[" ".join(a) for a, _ in CLI_INPUTS])
def test_cli_numbers_are_checked_before_anything_runs(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert fragment in capsys.readouterr().err


def test_cli_enqueue_refuses_arguments_that_do_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    _write_app(tmp_path, monkeypatch, "bad_input_cli_app", url)
    assert main(["enqueue", "bad_input_cli_app:app", "add", "--args", "[1]"]) == 2
    assert "missing a required argument: 'b'" in capsys.readouterr().err
    assert main(["jobs", "list", "--store", url]) == 0
    assert "(no jobs)" in capsys.readouterr().out


def test_cli_and_reads_survive_a_row_with_an_unreadable_time(
    sqlite_app: Ratchet, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row written before delays were bounded (now + inf) must not break every read."""
    bad = new_job_id()
    sqlite_app.store.enqueue(
        NewJob(id=bad, name="x", target="m:x", args_json="[]", kwargs_json="{}",
               delay_seconds=float("inf"))
    )  # fmt: skip
    good = new_job_id()
    sqlite_app.store.enqueue(
        NewJob(id=good, name="y", target="m:y", args_json="[]", kwargs_json="{}")
    )
    assert {job.id for job in sqlite_app.list_jobs()} == {bad, good}
    assert sqlite_app.get_job(bad).scheduled_at.year == 9999  # type: ignore[union-attr]
    assert main(["jobs", "list", "--store", sqlite_url]) == 0
    out = capsys.readouterr().out
    assert bad in out and good in out and "9999-12-31" in out
    assert main(["jobs", "show", bad, "--store", sqlite_url]) == 0
    assert "scheduled: 9999-12-31" in capsys.readouterr().out


# -- background threads that die ----------------------------------------------------------


def _boom(*_args: object, **_kwargs: object) -> float:
    return 1 / 0


def test_a_dying_poller_takes_the_embedded_worker_down(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the poll loop's own bookkeeping used to kill the poller silently: the
    worker said "started" and never claimed again."""
    monkeypatch.setattr(AdaptivePolling, "after_poll", _boom)
    worker = app.worker().start()
    deadline = time.monotonic() + 30  # a bound, not a timing assertion
    while worker.crash is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert worker.crash is not None
    worker.stop()  # waits for the drain the crash began
    assert worker.crash.thread_name == "ratchet-poller"
    assert isinstance(worker.crash.cause, ZeroDivisionError)
    with pytest.raises(WorkerCrashedError, match="'ratchet-poller' thread died of Zero"):
        worker.raise_if_crashed()
    critical = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert critical and critical[0].exc_info is not None  # with its traceback


def test_run_worker_raises_when_a_thread_dies(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AdaptivePolling, "after_poll", _boom)
    # Without the fix run_worker would never return: a SIGTERM after 60 s ends it instead.
    rescue = threading.Timer(60, signal.raise_signal, args=(signal.SIGTERM,))
    rescue.start()
    try:
        with pytest.raises(WorkerCrashedError, match="ZeroDivisionError") as info:
            app.run_worker()
    finally:
        rescue.cancel()
    assert info.value.thread_name == "ratchet-poller"


def test_ratchet_worker_exits_non_zero_when_a_thread_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_app(tmp_path, monkeypatch, "bad_input_dying_app", f"sqlite:///{tmp_path / 'w.db'}")
    monkeypatch.setattr(AdaptivePolling, "after_poll", _boom)
    rescue = threading.Timer(60, signal.raise_signal, args=(signal.SIGTERM,))
    rescue.start()
    try:
        code = main(["worker", "bad_input_dying_app:app"])
    finally:
        rescue.cancel()
    assert code != 0
    assert "'ratchet-poller' thread died of ZeroDivisionError" in capsys.readouterr().err


def test_a_store_outage_backs_off_without_killing_the_poller(app: Ratchet) -> None:
    """The other side of the line: a failing claim is the store's problem, not a crash."""
    real_claim = app.store.claim_due_jobs
    failures = iter([StoreUnavailableError("down")])

    def flaky_claim(**kwargs: Any) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_claim(**kwargs)

    app.store.claim_due_jobs = flaky_claim  # type: ignore[method-assign]

    @app.job(name="ok")
    def ok() -> str:
        return "ok"

    with app.worker() as worker:
        job_id = ok.enqueue()
        wait_for(app, job_id, JobStatus.SUCCEEDED)
        assert worker.crash is None
        assert worker.stats.store_errors >= 1


# -- recurring schedules that cannot be scheduled -----------------------------------------


def test_a_stored_schedule_that_never_fires_is_logged_once_and_skipped(
    app: Ratchet, caplog: pytest.LogCaptureFixture
) -> None:
    """A schedule saved before impossible dates were refused used to log a traceback at
    every scheduler pass; now one ERROR line, and the other schedules carry on."""

    @app.job(name="tick")
    def tick() -> None: ...

    app.schedule_recurring(tick, "* * * * * *", id="every-second")
    good = app.list_recurring()[0]
    app.store.save_recurring(dataclasses.replace(good, id="february-30", cron="0 0 30 2 *"))
    scheduler = RecurringScheduler(app._node_context(), max_sleep=60.0)
    with caplog.at_level(logging.DEBUG, logger="ratchet.recurring"):
        delays = [scheduler.tick(), scheduler.tick()]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "'february-30'" in errors[0].getMessage() and "never fires" in errors[0].getMessage()
    assert errors[0].exc_info is None  # the schedule is bad, not the code: no traceback
    assert all(delay <= 1.0 for delay in delays)  # the good schedule's next second


# -- unknown RATCHET_* variables ----------------------------------------------------------


def test_unknown_ratchet_variables_are_reported_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from ratchet import _environment

    monkeypatch.setattr(_environment, "_warned", set())
    monkeypatch.setenv("RATCHET_WORKER_USE_VIRTUAL_THREADS", "true")
    monkeypatch.setenv("RATCHET_WORKER_CONCURENCY", "2")
    monkeypatch.setenv("RATCHET_TEST_ANYTHING", "1")  # the test suites' own
    monkeypatch.setenv("RATCHET_REDIS_CHANNEL", "x")  # read by ratchet-coordinator-redis
    with caplog.at_level(logging.WARNING, logger="ratchet.config"):
        Ratchet("memory://", coordinator="none").close()
        Ratchet("memory://", coordinator="none").close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "ratchet.config"]
    assert len(warnings) == 1, warnings
    text = warnings[0]
    assert "RATCHET_WORKER_CONCURENCY (did you mean RATCHET_WORKER_CONCURRENCY?)" in text
    assert "RATCHET_WORKER_USE_VIRTUAL_THREADS (virtual threads" in text
    assert "does not exist in Ratchet for Python" in text
    assert "RATCHET_TEST_ANYTHING" not in text and "RATCHET_REDIS_CHANNEL" not in text


def test_every_variable_the_repository_reads_is_known() -> None:
    """When this fails, add the new variable to ``ratchet._environment`` (or give it an
    option): otherwise setting it would warn that it is unknown."""
    from ratchet._environment import IGNORED_PREFIXES, known_variables

    root = Path(__file__).parents[2]
    sources = [
        *root.glob("*/src/**/*.py"),
        *root.glob("*/*/src/**/*.py"),
        *root.glob("scripts/*"),
        *root.glob("scripts/services.d/**/*"),
    ]
    assert len(sources) > 50
    found: set[str] = set()
    for path in sources:
        if path.is_file() and path.name != "_environment.py":  # it quotes misspellings
            found.update(re.findall(r"\bRATCHET_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    unknown = {n for n in found if not n.startswith(IGNORED_PREFIXES)} - known_variables()
    assert not unknown


def test_a_third_party_plugin_may_read_its_own_variables() -> None:
    from ratchet._environment import unknown_variables_message

    environ = {"RATCHET_ACME_URL": "x", "RATCHET_REDIS_ULR": "y"}
    message = unknown_variables_message(environ, plugin_names=["acme", "redis"])
    assert message is not None
    assert "RATCHET_ACME_URL" not in message  # the acme plugin's own
    assert "RATCHET_REDIS_ULR (did you mean RATCHET_REDIS_URL?)" in message  # first-party
    assert unknown_variables_message({"RATCHET_STORE_URL": "memory://"}) is None


# -- earlier catalogue entries ------------------------------------------------------------


def _write_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, url: str) -> None:
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""
        from ratchet import Ratchet
        app = Ratchet({url!r}, poll_burst_seconds=0.02, poll_idle_max_seconds=0.2,
                      coordinator="none")

        @app.job(name="add")
        def add(a, b):
            return a + b
        """)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_non_json_arguments_name_the_argument(app: Ratchet) -> None:
    @app.job
    def work(*args: object, **kwargs: object) -> None: ...

    with pytest.raises(
        ArgumentsNotSerializableError, match=r"Positional argument 1 .*\{1, 2\}.*'set'"
    ):
        work.enqueue("fine", {1, 2})
    with pytest.raises(ArgumentsNotSerializableError, match=r"Keyword argument 'when'"):
        work.enqueue(when=object())
    with pytest.raises(ArgumentsNotSerializableError, match="Param 'blob'"):
        work.builder().param("blob", b"bytes").submit()
    with pytest.raises(ArgumentsNotSerializableError, match="nan"):
        work.enqueue(float("nan"))
    assert isinstance(ArgumentsNotSerializableError("x"), TypeError)
    assert isinstance(ArgumentsMismatchError("x"), TypeError)
    assert app.list_jobs() == []


def test_payload_over_the_limit() -> None:
    app = Ratchet("memory://", max_payload_kb=1, **FAST)

    @app.job
    def work(data: str) -> None: ...

    work.enqueue("x" * 900)
    with pytest.raises(PayloadTooLargeError, match=r"over the limit of 1024 bytes.*reference"):
        work.enqueue("é" * 600)  # 1200 bytes encoded
    assert len(app.list_jobs()) == 1


def test_unknown_store_scheme_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a machine where only ratchet-core is installed.
    monkeypatch.setenv("RATCHET_DISABLED_PLUGINS", "postgresql,mysql,mongodb")
    with pytest.raises(UnknownStoreError) as info:
        Ratchet("postgres://db/app")
    message = str(info.value)
    assert "'postgres'" in message and "Installed: 'memory', 'sqlite'" in message
    assert "Did you mean 'postgresql'?" in message
    assert "pip install ratchet-store-postgresql" in message


def test_malformed_store_urls() -> None:
    with pytest.raises(InvalidStoreURLError, match="has no scheme"):
        Ratchet("ratchet.db")
    with pytest.raises(InvalidStoreURLError, match="names a host"):
        Ratchet("sqlite://localhost/x.db")
    with pytest.raises(InvalidStoreURLError, match="no file path"):
        Ratchet("sqlite:///")
    with pytest.raises(TypeError, match="URL string or a JobStore"):
        Ratchet(42)  # type: ignore[arg-type]


def test_duplicate_idempotency_key_even_after_completion(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    first = work.builder().idempotency_key("req-1").submit()
    app.run_until_idle(timeout=30)
    with pytest.raises(DuplicateIdempotencyKeyError, match=f"'req-1'.*{first}") as info:
        work.builder().idempotency_key("req-1").submit()
    assert info.value.existing_job_id == first
    assert len(app.list_jobs()) == 1


def test_active_business_key_conflict_and_release(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    first = work.builder().business_key("order-9").submit()
    with pytest.raises(BusinessKeyConflictError, match=f"'order-9'.*{first}") as info:
        work.builder().business_key("order-9").submit()
    assert info.value.existing_job_id == first
    app.run_until_idle(timeout=30)  # SUCCEEDED releases the key
    second = work.builder().business_key("order-9").submit()
    assert app.get_job(second).status is JobStatus.PENDING  # type: ignore[union-attr]


def test_retry_job_rereserves_the_business_key(app: Ratchet) -> None:
    @app.job(max_retries=0)
    def fails() -> None:
        raise RuntimeError("x")

    failed = fails.builder().business_key("k").submit()
    app.run_until_idle(timeout=30)
    holder = fails.builder().business_key("k").submit()  # FAILED released the key
    with pytest.raises(BusinessKeyConflictError, match="cannot be retried"):
        app.retry_job(failed)
    assert app.get_job(failed).status is JobStatus.FAILED  # type: ignore[union-attr]
    app.cancel_job(holder)
    assert app.retry_job(failed) is True


def test_invalid_builder_values(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    with pytest.raises(ValueError, match="Priority 9 is out of range"):
        work.builder().priority(9)
    with pytest.raises(ValueError, match="Delay -1 s is negative"):
        work.builder().delay(seconds=-1)
    with pytest.raises(ValueError, match="timezone-aware"):
        work.builder().at(dt.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="max_retries is -1"):
        work.builder().max_retries(-1)
    with pytest.raises(ValueError, match="Business key '' must be a non-empty"):
        work.builder().business_key("")
    with pytest.raises(ValueError, match="Job timeout 0"):
        app.job(timeout=0)(lambda: None)


def test_errors_share_one_root() -> None:
    for name in ratchet.errors.__all__:
        assert issubclass(getattr(ratchet.errors, name), ratchet.RatchetError)
    assert issubclass(ratchet.InvalidCronError, ValueError)
    assert issubclass(ValueOutOfRangeError, ValueError)


def test_secrets_are_redacted_from_urls() -> None:
    from ratchet._redact import redact

    assert redact("postgresql://app:s3cret@db/x") == "postgresql://app:***@db/x"
    assert redact("failed: host=db password=s3cret port=5") == "failed: host=db password=*** port=5"
    assert redact("mongodb://db/x?authSource=admin&password=s3cret&tls=true") == (
        "mongodb://db/x?authSource=admin&password=***&tls=true"
    )
    assert redact("stomp://guest@broker:61613") == "stomp://guest@broker:61613"


def test_transactional_enqueue_needs_a_store_another_connection_can_reach(app: Ratchet) -> None:
    """memory:// keeps its database private: no application connection can join it."""

    @app.job
    def work() -> None: ...

    with pytest.raises(ratchet.RatchetError, match="in memory.*sqlite:/// file store"):
        app.enqueue_in(object(), work)
    assert app.list_jobs() == []


def test_transactional_enqueue_needs_a_capable_store(app: Ratchet) -> None:
    class PlainStore(SQLiteJobStore):
        enqueue_in = None  # a Protocol member set to None is not implemented
        enqueue_many_in = None

    store = PlainStore.from_memory_url("memory://")
    plain = Ratchet(store, coordinator="none")

    @plain.job
    def work() -> None: ...

    with pytest.raises(ratchet.RatchetError, match="cannot enqueue inside your transaction"):
        plain.enqueue_in(object(), work)
    assert plain.list_jobs() == []
    plain.close()

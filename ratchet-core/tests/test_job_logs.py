"""Per-job log lines and progress: ``current_job().logger`` and ``.progress`` stored with
the job, by attempt, bounded, masked, batched, fenced, purged; ``app.job_logs``,
``app.job_progress`` and ``ratchet jobs logs``."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from ratchet import JobLogs, JobStatus, Ratchet, current_job
from ratchet._clock import DatabaseClock
from ratchet._engine.archiver import Archiver
from ratchet._engine.job_logs import BATCH_LINES, JobLogWriter
from ratchet.cli import main
from ratchet.errors import InvalidProgressError, JobLogsUnsupportedError
from ratchet.spi import JobLogLine
from ratchet.stores.sqlite.store import SQLiteJobStore

SECRET = "hunter2-s3cr3t"
# Stored times may be a little apart from the execution record's (SQLite keeps REAL).
_SLACK = timedelta(milliseconds=50)


class CountingStore(SQLiteJobStore):
    """The memory store, counting (and optionally slowing or failing) job-log writes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.appends: list[int] = []
        self.progress_writes = 0
        self.delay = 0.0
        self.fail = False

    def append_job_logs(self, lines: Sequence[JobLogLine], *, keep_per_attempt: int) -> None:
        time.sleep(self.delay)
        if self.fail:
            raise ConnectionError(f"the database went away (password={SECRET})")
        self.appends.append(len(lines))
        super().append_job_logs(lines, keep_per_attempt=keep_per_attempt)

    def set_job_progress(self, job_id: str, claim_seq: int, **values: Any) -> bool:
        time.sleep(self.delay)
        if self.fail:
            raise ConnectionError(f"the database went away (password={SECRET})")
        self.progress_writes += 1
        return super().set_job_progress(job_id, claim_seq, **values)


class NoJobLogsStore(SQLiteJobStore):
    """A store without the capability (a runtime Protocol check sees a None member)."""

    append_job_logs = None  # type: ignore[assignment]  # hides the capability


@pytest.fixture
def counting() -> Iterator[tuple[Ratchet, CountingStore]]:
    store = CountingStore.from_memory_url("memory://")
    assert isinstance(store, CountingStore)
    app = Ratchet(store, **FAST)
    yield app, store
    app.close()


# -- lines --------------------------------------------------------------------------------


def test_lines_are_stored_by_attempt_across_a_retry(sqlite_app: Ratchet) -> None:
    app = sqlite_app

    @app.job(max_retries=1, backoff_ms=10)
    def flaky() -> None:
        job = current_job()
        job.logger.info("starting attempt %d", job.attempt)
        job.logger.debug("not stored: DEBUG is off for this logger")
        if job.attempt == 1:
            job.logger.warning("about to fail")
            raise ValueError("first attempt fails")
        job.logger.error("second attempt ends")

    job_id = flaky.enqueue()
    app.run_until_idle()
    assert app.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    logs = app.job_logs(job_id)
    assert isinstance(logs, JobLogs)
    assert [(a.attempt, a.claim_seq, a.dropped) for a in logs.attempts] == [(1, 1, 0), (2, 2, 0)]
    first, second = logs.attempts
    assert [(line.seq, line.level, line.message) for line in first.lines] == [
        (1, "INFO", "starting attempt 1"),
        (2, "WARNING", "about to fail"),
    ]
    assert [(line.level, line.message) for line in second.lines] == [
        ("INFO", "starting attempt 2"),
        ("ERROR", "second attempt ends"),
    ]
    # On the database clock, in order, within the attempt's execution record.
    executions = app.executions(job_id)
    for attempt, execution in zip(logs.attempts, executions, strict=True):
        assert execution.started_at is not None and execution.finished_at is not None
        for line in attempt.lines:
            assert line.logged_at.utcoffset() is not None
            assert execution.started_at - _SLACK <= line.logged_at <= execution.finished_at
    # An unknown job has nothing, as app.executions has nothing.
    assert app.job_logs("no-such-job").attempts == ()
    assert app.job_progress("no-such-job") is None


def test_debug_lines_are_stored_once_the_logger_is_enabled_for_them(app: Ratchet) -> None:
    logger = logging.getLogger("ratchet.job.debugging")
    logger.setLevel(logging.DEBUG)
    try:

        @app.job(name="debugging")
        def debugging() -> None:
            current_job().logger.debug("detail %s", "kept")

        job_id = debugging.enqueue()
        app.run_until_idle()
    finally:
        logger.setLevel(logging.NOTSET)
    assert [line.message for line in app.job_logs(job_id).lines] == ["detail kept"]


def test_lines_are_bounded_per_attempt_and_the_dropped_are_counted() -> None:
    app = Ratchet("memory://", job_log_max_lines=5, job_log_max_line_chars=100, **FAST)

    def chatty() -> None:
        for n in range(1, 13):
            current_job().logger.info("line %d", n)
        current_job().logger.info("x" * 500)

    app.job(name="chatty")(chatty)
    job_id = app.enqueue("chatty")
    app.run_until_idle()
    (attempt,) = app.job_logs(job_id).attempts
    assert [line.seq for line in attempt.lines] == [9, 10, 11, 12, 13]  # the newest kept
    assert attempt.dropped == 8
    assert app.job_logs(job_id).dropped == 8
    long_line = attempt.lines[-1].message
    assert len(long_line) == 100 and long_line.endswith("…")
    assert [line.message for line in attempt.lines[:-1]] == [f"line {n}" for n in range(9, 13)]
    # Negative control: with room for all, nothing is dropped.
    roomy = Ratchet("memory://", job_log_max_lines=100, **FAST)
    roomy.job(name="chatty")(chatty)
    other = roomy.enqueue("chatty")
    roomy.run_until_idle()
    assert roomy.job_logs(other).dropped == 0 and len(roomy.job_logs(other).lines) == 13
    app.close()
    roomy.close()


def test_secrets_are_masked_in_lines_tracebacks_and_notes(app: Ratchet) -> None:
    @app.job
    def leaky() -> None:
        job = current_job()
        job.logger.info("connecting with password=%s", SECRET)
        try:
            raise RuntimeError(f"login failed: password={SECRET}")
        except RuntimeError:
            job.logger.exception("could not log in")
        job.progress(1, total=2, note=f"token={SECRET}")
        job.logger.info("control \x1b[2J characters are escaped")

    job_id = leaky.enqueue()
    app.run_until_idle()
    lines = app.job_logs(job_id).lines
    text = "\n".join(line.message for line in lines)
    assert SECRET not in text
    assert lines[0].message == "connecting with password=***"
    assert lines[1].message.startswith("could not log in\nTraceback (most recent call last):")
    assert "RuntimeError: login failed: password=***" in lines[1].message  # the traceback
    assert "\x1b" not in lines[2].message and "\\x1b[2J" in lines[2].message
    progress = app.job_progress(job_id)
    assert progress is not None and progress.note == "token=***"


def test_switched_off_nothing_is_stored_and_lines_still_reach_the_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = Ratchet("memory://", job_logs_enabled=False, **FAST)
    answers: list[bool] = []

    @app.job
    def quiet() -> None:
        current_job().logger.warning("still logged")
        answers.append(current_job().progress(1, total=1))

    with caplog.at_level(logging.WARNING, logger="ratchet.job"):
        job_id = quiet.enqueue()
        app.run_until_idle()
    assert app.job_logs(job_id).attempts == ()
    assert app.job_progress(job_id) is None
    assert answers == [False]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("ratchet.job.")] == [
        "still logged"
    ]
    app.close()


def test_a_store_without_the_capability_says_so() -> None:
    store = NoJobLogsStore.from_memory_url("memory://")
    app = Ratchet(store, **FAST)
    answers: list[bool] = []

    @app.job
    def plain() -> None:
        current_job().logger.info("only in the Python logger")
        answers.append(current_job().progress(1))

    plain.enqueue()
    app.run_until_idle()
    assert answers == [False]
    with pytest.raises(JobLogsUnsupportedError, match="does not keep job logs"):
        app.job_logs("any")
    with pytest.raises(JobLogsUnsupportedError, match="SupportsJobLogs"):
        app.job_progress("any")
    app.close()


def test_lines_are_written_in_batches_never_one_write_per_line(
    counting: tuple[Ratchet, CountingStore],
) -> None:
    app, store = counting
    count = BATCH_LINES * 2 + 50

    @app.job
    def many() -> None:
        for n in range(count):
            current_job().logger.info("line %d", n)

    job_id = many.enqueue()
    app.run_until_idle()
    assert len(app.job_logs(job_id).lines) == count
    assert sum(store.appends) == count
    assert len(store.appends) <= 5, store.appends  # a handful of batches, not 450 writes
    assert max(store.appends) <= BATCH_LINES


def test_a_failing_store_never_fails_the_job_and_is_logged_rate_limited(
    counting: tuple[Ratchet, CountingStore], caplog: pytest.LogCaptureFixture
) -> None:
    app, store = counting
    store.fail = True

    @app.job
    def unlucky(n: int) -> int:
        current_job().logger.info("line of job %d", n)
        current_job().progress(1, total=1)
        return n

    with caplog.at_level(logging.WARNING, logger="ratchet.job_logs"):
        ids = [unlucky.enqueue(n) for n in range(3)]
        app.run_until_idle()
    assert [app.get_job(i).status for i in ids] == [JobStatus.SUCCEEDED] * 3  # type: ignore[union-attr]
    warnings = [r for r in caplog.records if r.name == "ratchet.job_logs"]
    assert 1 <= len(warnings) <= 2, [r.getMessage() for r in warnings]  # not one per write
    assert "Could not store job" in warnings[0].getMessage()
    assert "ConnectionError: the database went away (password=***)" in caplog.text
    assert SECRET not in caplog.text
    # Negative control: once the store is back, lines are stored again.
    store.fail = False
    later = unlucky.enqueue(9)
    app.run_until_idle()
    assert [line.message for line in app.job_logs(later).lines] == ["line of job 9"]


# -- progress -----------------------------------------------------------------------------


def test_progress_is_throttled_and_the_last_report_is_always_written(
    counting: tuple[Ratchet, CountingStore],
) -> None:
    app, store = counting
    answers: list[bool] = []

    @app.job
    def steps() -> None:
        for n in range(1, 101):
            answers.append(current_job().progress(n, total=100, note=f"step {n}"))

    job_id = steps.enqueue()
    app.run_until_idle()
    assert all(answers)
    assert 1 <= store.progress_writes <= 3  # about one a second, not 100
    progress = app.job_progress(job_id)
    assert progress is not None
    assert (progress.done, progress.total, progress.note) == (100, 100, "step 100")
    assert (progress.attempt, progress.claim_seq, progress.fraction) == (1, 1, 1.0)


def test_progress_is_checked(app: Ratchet) -> None:
    errors: list[str] = []

    @app.job
    def careless() -> None:
        for bad in ((-1, None, None), (float("nan"), None, None), (1, True, None), (1, 2, 3)):
            try:
                current_job().progress(*bad)  # type: ignore[arg-type]
            except InvalidProgressError as exc:
                errors.append(str(exc))
        current_job().progress(1, total=None, note="unknown total")

    job_id = careless.enqueue()
    app.run_until_idle()
    assert len(errors) == 4
    assert "-1" in errors[0] and "nan" in errors[1] and "True" in errors[2]
    progress = app.job_progress(job_id)
    assert progress is not None and (progress.total, progress.fraction) == (None, None)


def test_progress_of_a_stale_claim_is_refused(app: Ratchet) -> None:
    @app.job
    def long_job() -> None: ...

    job_id = long_job.enqueue()
    store = app.store
    assert isinstance(store, SQLiteJobStore)
    writer = JobLogWriter(
        store,
        clock=DatabaseClock(store.database_time),
        keep_per_attempt=100,
        max_line_chars=1000,
    )
    (first,) = store.claim_due_jobs(node_id="node-a", limit=1, priority_boost_seconds=0)
    stale = writer.open(first)
    assert stale.progress(1, 4, "first") is True  # the current claim: stored
    assert store.release_claim(job_id, first.claim_seq, message="taken over")
    (second,) = store.claim_due_jobs(node_id="node-b", limit=1, priority_boost_seconds=0)
    current = writer.open(second)
    time.sleep(1.05)  # past the throttle, so the stale report is really written
    assert stale.progress(2, 4, "stale") is False  # fenced
    assert stale.progress(3, 4, "stale again") is False  # and stays refused
    assert current.progress(1, 4, "second") is True
    stale.capture(logging.INFO, "a stale worker's line is still kept, apart")
    stale.finish()
    current.finish()
    progress = app.job_progress(job_id)
    assert progress is not None and (progress.claim_seq, progress.note) == (2, "second")
    assert [(a.claim_seq, len(a.lines)) for a in app.job_logs(job_id).attempts] == [(1, 1)]


# -- async jobs ---------------------------------------------------------------------------


def test_an_async_job_logs_without_blocking_its_event_loop(
    counting: tuple[Ratchet, CountingStore],
) -> None:
    app, store = counting
    store.delay = 0.4  # every job-log write takes 0.4 s
    timings: dict[str, float] = {}

    @app.job
    async def fetch() -> None:
        job = current_job()
        started = time.monotonic()
        for n in range(3):
            job.logger.info("async line %d", n)
            job.progress(n + 1, total=3)
            await asyncio.sleep(0)
        timings["async"] = time.monotonic() - started

    @app.job
    def blocking() -> None:
        started = time.monotonic()
        current_job().progress(1, total=1)
        timings["sync"] = time.monotonic() - started

    async_id = fetch.enqueue()
    blocking.enqueue()
    app.run_until_idle()
    assert timings["async"] < 0.2, timings  # the store's 0.4 s never reached the loop
    # Negative control: a synchronous job's due report is written in its own thread.
    assert timings["sync"] >= 0.4, timings
    # Its last lines and progress are in before its outcome, which would fence them.
    assert [line.message for line in app.job_logs(async_id).lines] == [
        f"async line {n}" for n in range(3)
    ]
    progress = app.job_progress(async_id)
    assert progress is not None and (progress.done, progress.total) == (3, 3)


# -- reading: the CLI ---------------------------------------------------------------------


def test_cli_prints_lines_by_attempt_with_dropped_counts_and_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'logs.db'}"
    app = Ratchet(url, job_log_max_lines=2, **FAST)

    @app.job(max_retries=1, backoff_ms=10)
    def report() -> None:
        job = current_job()
        for n in range(1, 4):
            job.logger.info("attempt %d line %d", job.attempt, n)
        job.progress(3, total=4, note="three of four")
        if job.attempt == 1:
            raise ValueError("again")

    job_id = report.enqueue()
    app.run_until_idle()
    app.close()
    assert main(["jobs", "logs", job_id, "--store", url]) == 0
    out = capsys.readouterr().out
    assert f"Job {job_id} (" in out and "): SUCCEEDED" in out
    assert 'progress: 3 of 4 (75%) "three of four", attempt 2' in out
    first = out.index("attempt 1 (claim 1):")
    second = out.index("attempt 2 (claim 2):")
    assert first < out.index("attempt 1 line 2") < out.index("attempt 1 line 3") < second
    assert out.count("(1 earlier line(s) of this attempt were dropped)") == 2
    assert "attempt 1 line 1" not in out and "attempt 2 line 3" in out
    # An id nobody knows is an error, as for 'jobs show'.
    assert main(["jobs", "logs", "no-such-job", "--store", url]) != 0
    assert "No job has id 'no-such-job'" in capsys.readouterr().err


def test_cli_says_when_a_job_logged_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'silent.db'}"
    app = Ratchet(url, **FAST)

    @app.job
    def silent() -> None: ...

    job_id = silent.enqueue()
    app.run_until_idle()
    app.close()
    assert main(["jobs", "logs", job_id, "--store", url]) == 0
    assert "No log lines are stored for this job." in capsys.readouterr().out


# -- retention ----------------------------------------------------------------------------


def test_the_archiver_purges_lines_and_progress_past_the_log_retention() -> None:
    app = Ratchet("memory://", log_retention_days=0, job_retention_days=365, **FAST)

    def noted() -> None:
        current_job().logger.info("one")
        current_job().logger.info("two")
        current_job().progress(1, total=1)

    app.job(name="noted")(noted)
    job_id = app.enqueue("noted")
    app.run_until_idle()
    assert len(app.job_logs(job_id).lines) == 2
    time.sleep(0.05)
    archiver = Archiver(app.store, app.options, app.node_id)
    assert archiver.run() is not None
    assert archiver.job_logs_purged == 3
    assert app.job_logs(job_id).attempts == () and app.job_progress(job_id) is None
    app.close()
    # Negative control: within the retention, nothing goes.
    keep = Ratchet("memory://", log_retention_days=30, **FAST)
    keep.job(name="noted")(noted)
    other = keep.enqueue("noted")
    keep.run_until_idle()
    archiver = Archiver(keep.store, keep.options, keep.node_id)
    assert archiver.run() is not None and archiver.job_logs_purged == 0
    assert len(keep.job_logs(other).lines) == 2 and keep.job_progress(other) is not None
    keep.close()


def test_lines_logged_from_another_thread_of_the_job_are_kept(app: Ratchet) -> None:
    @app.job
    def threaded() -> None:
        logger = current_job().logger
        worker = threading.Thread(target=lambda: logger.info("from a helper thread"))
        worker.start()
        worker.join()

    job_id = threaded.enqueue()
    app.run_until_idle()
    assert [line.message for line in app.job_logs(job_id).lines] == ["from a helper thread"]

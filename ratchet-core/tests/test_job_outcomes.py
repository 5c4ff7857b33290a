"""Every outcome of a job body is recorded, and timeouts keep their promises.

Issue #15, "Jobs that never finish" (points 5 to 7) and the result size limit of point 11.
When one of these fails, look at ``ratchet._engine.runner`` (deciding outcomes),
``ratchet._engine.outcomes`` (recording them), ``ratchet._engine.timeouts`` (timeouts),
``ratchet._engine.loop_watchdog``, ``ratchet._codec.encode_result`` and ``run_until_idle``
in ``ratchet._engine.idle``.
Waits are bounded generously and only as failure bounds; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ratchet
from conftest import FAST
from ratchet import BackoffPolicy, JobStatus, Ratchet
from ratchet._engine import executor as executor_module
from ratchet._engine.failure_text import describe_failure, summarize_failure
from ratchet._engine.runner import JobRunner

BOUND = 30.0  # failure bound for every wait: reached only when the behaviour is broken


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g} s: {what}")
        time.sleep(0.01)


def status(app: Ratchet, job_id: str) -> JobStatus | None:
    job = app.get_job(job_id)
    return None if job is None else job.status


class LogEvent(logging.Handler):
    """Sets :attr:`seen` when a record on ``logger`` contains every one of ``words``."""

    def __init__(self, *words: str) -> None:
        super().__init__(logging.DEBUG)
        self.words = words
        self.seen = threading.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if all(word in message for word in self.words):
            self.messages.append(message)
            self.seen.set()


@pytest.fixture
def log_event() -> Iterator[Callable[..., LogEvent]]:
    handlers: list[LogEvent] = []
    logger = logging.getLogger("ratchet")

    def make(*words: str) -> LogEvent:
        handler = LogEvent(*words)
        logger.addHandler(handler)
        handlers.append(handler)
        return handler

    previous = logger.level
    logger.setLevel(logging.DEBUG)
    yield make
    logger.setLevel(previous)
    for handler in handlers:
        logger.removeHandler(handler)


# -- point 5: every outcome of a body is recorded ------------------------------------------


class CustomBase(BaseException):
    """A BaseException subclass outside the standard ones."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


class NotAString(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]  # noqa: PLE0307 -- the defect under test


RAISED: dict[str, Callable[[], BaseException]] = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "CustomBase": lambda: CustomBase("custom"),
    "Unprintable": Unprintable,
    "NotAString": NotAString,
}


@pytest.mark.parametrize("flavour", ["sync", "sync+timeout", "async", "async+timeout"])
@pytest.mark.parametrize("kind", sorted(RAISED))
def test_any_exception_of_a_body_fails_only_its_job(app: Ratchet, kind: str, flavour: str) -> None:
    """A body raising a BaseException or an unprintable exception must end FAILED (after
    one attempt with max_retries=0), and the same worker must go on to run the next job.
    Before the fix such jobs stayed RUNNING with 0 attempts (an async SystemExit even
    stopped the event loop of every async job)."""
    timeout = 10.0 if flavour.endswith("+timeout") else None

    def boom() -> None:
        raise RAISED[kind]()

    async def boom_async() -> None:
        raise RAISED[kind]()

    def fine() -> str:
        return "fine"

    async def fine_async() -> str:
        return "fine"

    is_async = flavour.startswith("async")
    poison = app.job(name="poison", max_retries=0, timeout=timeout)(
        boom_async if is_async else boom
    )
    healthy = app.job(name="healthy", timeout=timeout)(fine_async if is_async else fine)
    poison_id = poison.enqueue()
    healthy_id = healthy.enqueue()
    with app.worker(concurrency=1):
        wait_for(
            lambda: (
                status(app, poison_id) is JobStatus.FAILED
                and status(app, healthy_id) is JobStatus.SUCCEEDED
            ),
            f"{kind} ({flavour}) recorded as FAILED and the next job run",
        )
    job = app.get_job(poison_id)
    assert job is not None and job.attempts == 1
    assert (job.last_error or "").startswith(f"{kind}: ")
    if kind in ("Unprintable", "NotAString"):
        assert f"{kind}: <unprintable {kind}>" in (job.last_error or "")


def test_system_exit_and_keyboard_interrupt_are_retried_like_any_failure(app: Ratchet) -> None:
    """Documented choice: SystemExit and KeyboardInterrupt raised by a body are ordinary
    failures (retried within max_retries), never a request to stop the worker."""

    @app.job(max_retries=2, backoff=BackoffPolicy.NONE)
    def exits() -> str:
        attempt = ratchet.current_job().attempt
        if attempt == 1:
            raise SystemExit(0)
        if attempt == 2:
            raise KeyboardInterrupt
        return "third time"

    job_id = exits.enqueue()
    app.run_until_idle(timeout=BOUND)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.result) == (JobStatus.SUCCEEDED, 3, "third time")
    messages = [e.message or "" for e in app.executions(job_id)]
    assert messages[0].startswith("SystemExit: 0") and messages[1].startswith("KeyboardInterrupt")


def test_describe_failure_never_raises() -> None:
    """``last_error`` must be built even when the exception's ``__str__`` raises or
    returns something that is not a string."""
    for exc in (Unprintable(), NotAString()):
        name = type(exc).__qualname__
        assert describe_failure(exc).startswith(f"{name}: <unprintable {name}>")
        assert summarize_failure(exc) == f"{name}: <unprintable {name}>"
    assert summarize_failure(ValueError("x" * 50), limit=10) == "ValueError: xxxxxxxxx…"


class OverflowingDict(dict[str, int]):
    """A container whose encoding raises OverflowError."""

    def items(self) -> Any:
        raise OverflowError("too large to encode")


def deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


UNENCODABLE: dict[str, tuple[Callable[[], Any], str]] = {
    "deep-list": (lambda: deep_list(100_000), "list"),
    "nan": (lambda: {"x": math.nan}, "dict"),
    "infinity": (lambda: math.inf, "float"),
    "set": (lambda: {1, 2}, "set"),
    "object": (object, "object"),
    "huge-int": (lambda: 10**5000, "int"),
    "tuple-keys": (lambda: {(1, 2): "x"}, "dict"),
    "lone-surrogate": (lambda: "\ud800", "str"),
    "overflow": (lambda: OverflowingDict(a=1), "test_job_outcomes.OverflowingDict"),
}


@pytest.mark.parametrize("case", sorted(UNENCODABLE))
def test_a_result_that_cannot_be_stored_still_succeeds(
    sqlite_app: Ratchet, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The README promises that a result that cannot be encoded is logged and the job
    still succeeds, for every failure kind (RecursionError, OverflowError, ValueError,
    TypeError, a lone surrogate the database cannot store); the worker runs on."""
    make, result_type = UNENCODABLE[case]
    app = sqlite_app

    @app.job(max_retries=0)
    def returns() -> Any:
        return make()

    @app.job
    def after() -> str:
        return "after"

    job_id, after_id = returns.enqueue(), after.enqueue()
    with caplog.at_level(logging.WARNING, logger="ratchet"):
        app.run_until_idle(timeout=BOUND, concurrency=1)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.result, job.result_type) == (JobStatus.SUCCEEDED, None, result_type)
    assert "cannot be stored as JSON" in caplog.text
    assert app.get_job(after_id).result == "after"  # type: ignore[union-attr]


def test_results_over_the_size_limit_are_dropped_and_the_job_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """RATCHET_MAX_RESULT_KB: a larger result is not stored (``result`` None, the type
    kept), with a warning; a result within the limit is stored."""
    app = Ratchet("memory://", max_result_kb=1, **FAST)

    @app.job
    def text(size: int) -> str:
        return "é" * size  # two bytes each in UTF-8: the limit counts bytes

    big, small = text.enqueue(600), text.enqueue(400)
    with caplog.at_level(logging.WARNING, logger="ratchet"):
        app.run_until_idle(timeout=BOUND)
    big_job, small_job = app.get_job(big), app.get_job(small)
    assert big_job is not None and small_job is not None
    assert (big_job.status, big_job.result, big_job.result_type) == (
        JobStatus.SUCCEEDED,
        None,
        "str",
    )
    assert (small_job.status, small_job.result) == (JobStatus.SUCCEEDED, "é" * 400)
    assert "over the limit of 1024 bytes (RATCHET_MAX_RESULT_KB=1)" in caplog.text
    assert app.options.max_result_bytes == 1024
    assert Ratchet("memory://", coordinator="none").options.max_result_kb == 100


def test_an_outcome_that_cannot_be_recorded_still_ends_the_job(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of defence: when recording an outcome raises unexpectedly (here a
    broken retry decision and a broken result encoder), the job must be dead-lettered
    with what went wrong, not left RUNNING, and the worker must run the next job."""

    def broken_decide(self: JobRunner, job: object, exc: BaseException) -> tuple[str, float]:
        raise RuntimeError("decide is broken")

    def broken_encode(*_args: object, **_kwargs: object) -> tuple[str, str]:
        raise RuntimeError("encoder is broken")

    @app.job
    def fails() -> None:
        raise ValueError("body failed")

    @app.job
    def succeeds() -> str:
        return "ok"

    failing, succeeding = fails.enqueue(), succeeds.enqueue()
    monkeypatch.setattr(JobRunner, "decide", broken_decide)
    monkeypatch.setattr("ratchet._engine.runner.encode_result", broken_encode)
    app.run_until_idle(timeout=BOUND, concurrency=1)
    for job_id, cause in ((failing, "decide is broken"), (succeeding, "encoder is broken")):
        job = app.get_job(job_id)
        assert job is not None and job.status is JobStatus.FAILED
        assert "could not record the outcome" in (job.last_error or "")
        assert cause in (job.last_error or "")
    monkeypatch.undo()

    @app.job
    def later() -> str:
        return "later"

    later_id = later.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert status(app, later_id) is JobStatus.SUCCEEDED


def test_a_job_that_cannot_be_started_is_recorded(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should handing a job to the pool or the loop raise, the slot must be freed and the
    job's failure recorded (before the fix the exception escaped into the poller)."""

    def broken_resolve(self: JobRunner, job: object) -> object:
        raise RuntimeError("cannot start")

    @app.job(max_retries=0)
    def work() -> None: ...

    job_id = work.enqueue()
    monkeypatch.setattr(JobRunner, "resolve", broken_resolve)
    app.run_until_idle(timeout=BOUND)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.FAILED
    assert "RuntimeError: cannot start" in (job.last_error or "")


# -- point 6: timeouts ---------------------------------------------------------------------


def test_a_timed_out_sync_body_keeps_its_slot_until_it_returns(
    app: Ratchet, log_event: Callable[..., LogEvent]
) -> None:
    """Concurrency 1, timeout 0.2 s, a body blocked on an Event past its timeout: no second
    copy (its retry) may start while the first still runs, and the timeout failure is
    recorded only after the body has returned. Before the fix the retry started at once,
    beside the still-running first copy."""
    release, overlap = threading.Event(), threading.Event()
    lock = threading.Lock()
    events: list[tuple[str, int, str]] = []
    running = [0]

    @app.job(timeout=0.2, max_retries=1, backoff=BackoffPolicy.NONE)
    def blocks() -> str:
        context = ratchet.current_job()
        with lock:
            running[0] += 1
            if running[0] > 1:
                overlap.set()
            events.append(("enter", context.attempt, ""))
        if context.attempt == 1:
            release.wait(BOUND)
        seen = status(app, context.id)
        with lock:
            running[0] -= 1
            events.append(("exit", context.attempt, seen.value if seen else "gone"))
        return f"attempt {context.attempt}"

    warned = log_event("exceeded its timeout of 0.2 s", "keeps its slot")
    job_id = blocks.enqueue()
    with app.worker(concurrency=1):
        try:
            # Either the fixed behaviour (a warning, the slot kept) or the defect (a second
            # copy starting) shows up; only then is the first copy let go.
            wait_for(lambda: warned.seen.is_set() or overlap.is_set(), "the timeout to pass")
        finally:
            release.set()
        wait_for(lambda: status(app, job_id) is JobStatus.SUCCEEDED, "the retry to succeed")
    assert not overlap.is_set(), f"two copies ran at once: {events}"
    assert events == [
        ("enter", 1, ""),
        ("exit", 1, "RUNNING"),  # still RUNNING: the timeout is recorded after the return
        ("enter", 2, ""),
        ("exit", 2, "RUNNING"),
    ]
    first, second = app.executions(job_id)
    assert first.status.value == "FAILED"
    assert "exceeded its timeout of 0.2 s" in (first.message or "")
    assert "was discarded" in (first.message or "")
    assert second.status.value == "SUCCEEDED"
    assert app.get_job(job_id).result == "attempt 2"  # type: ignore[union-attr]


def test_cancel_requested_tells_a_timed_out_body_to_stop(app: Ratchet) -> None:
    """``current_job().cancel_requested`` turns true at the timeout; what the body
    returns afterwards is discarded and the attempt is a timeout failure."""
    seen: list[bool] = []

    @app.job(timeout=0.2, max_retries=0)
    def cooperative() -> str:
        context = ratchet.current_job()
        seen.append(context.cancel_requested)
        deadline = time.monotonic() + BOUND
        while not context.cancel_requested and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(context.cancel_requested)
        return "stopped early"

    job_id = cooperative.enqueue()
    app.run_until_idle(timeout=BOUND)
    job = app.get_job(job_id)
    assert seen == [False, True]
    assert job is not None and (job.status, job.result) == (JobStatus.FAILED, None)
    assert "exceeded its timeout of 0.2 s" in (job.last_error or "")


def test_a_drain_still_releases_a_timed_out_body_that_does_not_return(
    app: Ratchet, log_event: Callable[..., LogEvent]
) -> None:
    """A timed-out body that ignores cancel_requested holds its claim; stopping the
    worker must still finish (after the shutdown timeout) and release the claim with no
    charge, and the body's late outcome must be fenced off."""
    release = threading.Event()

    @app.job(timeout=0.1, max_retries=0)
    def stuck() -> None:
        release.wait(BOUND)

    warned = log_event("exceeded its timeout of 0.1 s")
    job_id = stuck.enqueue()
    worker = app.worker(concurrency=1).start()
    try:
        assert warned.seen.wait(BOUND), "the timeout warning was not logged"
        stopper = threading.Thread(target=worker.stop, kwargs={"timeout": 0.1})
        stopper.start()
        stopper.join(BOUND)
        assert not stopper.is_alive(), "the drain did not finish"
        job = app.get_job(job_id)
        assert job is not None
        assert (job.status, job.attempts, job.crash_count) == (JobStatus.PENDING, 0, 0)
        assert worker.stats.released_at_shutdown == 1
    finally:
        release.set()
    wait_for(lambda: worker.stats.stale_outcomes == 1, "the late outcome to be fenced")
    assert status(app, job_id) is JobStatus.PENDING


def test_an_async_job_blocking_the_loop_is_reported_and_fails_its_timeout(
    app: Ratchet, log_event: Callable[..., LogEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``async def`` that blocks the event loop past its timeout must be recorded as a
    timeout failure (it was SUCCEEDED), the watchdog must log a warning naming it, and
    the other async jobs must run once it lets go."""
    monkeypatch.setattr(executor_module, "LOOP_STALL_SECONDS", 0.1)
    release = threading.Event()

    @app.job(timeout=0.1, max_retries=0)
    async def blocker() -> str:
        release.wait(BOUND)  # blocks the loop: no await
        time.sleep(0.3)  # and certainly past its timeout once released
        return "blocked"

    @app.job
    async def ping() -> str:
        await asyncio.sleep(0)
        return "pong"

    job_id = blocker.enqueue()
    warned = log_event("has not answered", job_id)
    with app.worker(concurrency=2):
        try:
            assert warned.seen.wait(BOUND), "the blocked loop was not reported"
            ping_id = ping.enqueue()
        finally:
            release.set()
        wait_for(lambda: status(app, job_id) is JobStatus.FAILED, "the blocker to fail")
        wait_for(lambda: status(app, ping_id) is JobStatus.SUCCEEDED, "async jobs to run on")
    job = app.get_job(job_id)
    assert job is not None and job.result is None
    assert "exceeded its timeout of 0.1 s" in (job.last_error or "")
    assert "blocked the loop" in (job.last_error or "")
    assert "(test_job_outcomes:" in warned.messages[0]  # the job's name is given too


def test_an_async_body_timeout_error_before_its_timeout_is_its_own(app: Ratchet) -> None:
    """A TimeoutError the body raises itself, well within its timeout, is not reworded
    as a Ratchet timeout."""

    @app.job(timeout=30, max_retries=0)
    async def own_timeout() -> None:
        raise TimeoutError("upstream timed out")

    job_id = own_timeout.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert (app.get_job(job_id).last_error or "").startswith(  # type: ignore[union-attr]
        "TimeoutError: upstream timed out"
    )


SIGNAL_WORKER = """
import logging, sys, threading
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
from ratchet import Ratchet

app = Ratchet(sys.argv[1], coordinator="none", shutdown_timeout_seconds=600,
              poll_burst_seconds=0.02, poll_idle_max_seconds=0.2)

@app.job(name="stuck", max_retries=0)
def stuck() -> None:
    print("began", flush=True)
    threading.Event().wait()

if __name__ == "__main__":
    app.run_worker(concurrency=1)
    print("exited", flush=True)
"""


def stuck_stub() -> None:
    """The producer's stand-in for the worker's ``stuck`` job (enqueued by name)."""


def _lines(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line.rstrip("\n"))


def _expect(lines: queue.Queue[str], text: str, seen: list[str]) -> None:
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"{text!r} not printed within {BOUND:g} s; got {seen}")


@pytest.mark.slow
def test_a_second_signal_cuts_the_drain_short(tmp_path: Path, sqlite_url: str) -> None:
    """SIGTERM drains (waiting for the stuck job up to a 600 s shutdown timeout); a second
    SIGTERM must stop waiting, release the claim with no charge and let the process exit."""
    script = tmp_path / "signal_worker.py"
    script.write_text(SIGNAL_WORKER)
    producer = Ratchet(sqlite_url, coordinator="none")
    job_id = producer.job(name="stuck", max_retries=0)(stuck_stub).enqueue()
    process = subprocess.Popen(
        [sys.executable, str(script), sqlite_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    out: queue.Queue[str] = queue.Queue()
    err: queue.Queue[str] = queue.Queue()
    for stream, into in ((process.stdout, out), (process.stderr, err)):
        threading.Thread(target=_lines, args=(stream, into), daemon=True).start()
    seen_out: list[str] = []
    seen_err: list[str] = []
    try:
        _expect(out, "began", seen_out)
        process.send_signal(signal.SIGTERM)
        _expect(err, "Received SIGTERM; draining", seen_err)
        process.send_signal(signal.SIGTERM)
        _expect(err, "no longer waiting for running jobs", seen_err)
        process.wait(BOUND)
        _expect(out, "exited", seen_out)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    _expect(err, "Drain cut short with jobs still running; released 1 claim", seen_err)
    job = producer.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.crash_count) == (JobStatus.PENDING, 0, 0)
    producer.close()


# -- point 7: run_until_idle and pending retries -------------------------------------------


def test_run_until_idle_waits_for_retries_within_its_timeout(app: Ratchet) -> None:
    """A job failing once with backoff_ms=300 has succeeded when one run_until_idle call
    returns."""

    @app.job(max_retries=2, backoff=BackoffPolicy.FIXED, backoff_ms=300)
    def flaky() -> str:
        if ratchet.current_job().attempt == 1:
            raise ConnectionError("once")
        return "second"

    job_id = flaky.enqueue()
    assert app.run_until_idle(timeout=BOUND) == 2
    job = app.get_job(job_id)
    assert job is not None and (job.status, job.attempts, job.result) == (
        JobStatus.SUCCEEDED,
        2,
        "second",
    )


def test_run_until_idle_can_leave_retries_pending(app: Ratchet) -> None:
    """``wait_for_retries=False`` returns as soon as nothing is due; a retry beyond the
    timeout is left pending either way (and the call returns, it does not time out)."""

    @app.job(max_retries=2, backoff=BackoffPolicy.FIXED, backoff_ms=300)
    def flaky() -> str:
        if ratchet.current_job().attempt == 1:
            raise ConnectionError("once")
        return "second"

    @app.job(max_retries=1, backoff=BackoffPolicy.FIXED, backoff_ms=600_000)
    def much_later() -> None:
        raise ConnectionError("retry in ten minutes")

    job_id = flaky.enqueue()
    assert app.run_until_idle(timeout=BOUND, wait_for_retries=False) == 1
    job = app.get_job(job_id)
    assert job is not None and (job.status, job.attempts) == (JobStatus.PENDING, 1)
    assert job.scheduled_at > app.store.database_time()

    late_id = much_later.enqueue()
    assert app.run_until_idle(timeout=BOUND) == 1
    assert status(app, late_id) is JobStatus.PENDING

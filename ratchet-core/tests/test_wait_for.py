"""Waiting for results: ``app.wait_for``, ``wait_for_async`` and ``JobFunction.result``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from ratchet import Ratchet, _waiting
from ratchet.errors import (
    JobCanceledError,
    JobFailedError,
    JobNotFoundError,
    StoreUnavailableError,
)
from ratchet.events import JobSucceeded
from ratchet.spi import JobStatus
from ratchet_tck.loopback import LoopbackHarness


def _app(sqlite_url: str) -> Ratchet:
    app = Ratchet(
        sqlite_url, coordinator="none", poll_burst_seconds=0.02, poll_idle_max_seconds=0.1
    )
    app.job(name="double")(double)
    app.job(name="broken", max_retries=0)(broken)
    return app


def double(n: int) -> int:
    return 2 * n


def broken() -> None:
    raise ValueError("the ledger is locked\nsecond line")


def test_wait_for_returns_the_final_snapshot(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    job_id = app.enqueue("double", 21)
    with app.worker():
        job = app.wait_for(job_id, timeout=30)
    assert (job.status, job.result) == (JobStatus.SUCCEEDED, 42)
    app.close()


def test_a_job_ending_on_this_process_wakes_the_waiter(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With reads only every 60 s, only this process's own event can end the wait soon."""
    monkeypatch.setattr(_waiting, "FIRST_READ_PAUSE_SECONDS", 60.0)
    monkeypatch.setattr(_waiting, "SLOWEST_READ_PAUSE_SECONDS", 60.0)
    app = _app(sqlite_url)
    job_id = app.enqueue("double", 4)
    done: list[Any] = []
    waiter = threading.Thread(target=lambda: done.append(app.wait_for(job_id)), daemon=True)
    waiter.start()
    with app.worker():
        waiter.join(30)
    assert done and done[0].result == 8, "the waiter was not woken by the job's end"
    app.close()


def test_a_job_run_by_another_process_is_seen_by_reading(sqlite_url: str) -> None:
    """Another application (its own events) runs the job: the waiter reads it done."""
    waiting, working = _app(sqlite_url), _app(sqlite_url)
    job_id = waiting.enqueue("double", 5)
    with working.worker():
        assert waiting.wait_for(job_id, timeout=30).result == 10
    waiting.close()
    working.close()


def test_waiting_subscribes_only_while_someone_waits(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    job_id = app.enqueue("double", 1)
    assert not app.observers.events.wants(JobSucceeded)  # nobody waits: no events built
    subscribed: list[bool] = []
    app.store.get_job = _spy(
        app.store.get_job,
        lambda: subscribed.append(  # type: ignore[method-assign]
            app.observers.events.wants(JobSucceeded)
        ),
    )
    with pytest.raises(TimeoutError):
        app.wait_for(job_id, timeout=0.05)
    assert subscribed and all(subscribed)
    assert not app.observers.events.wants(JobSucceeded)
    app.close()


def test_timeout_says_what_the_job_is_doing_and_leaves_it(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    job_id = app.enqueue("double", 3)
    with pytest.raises(TimeoutError, match=rf"Job '{job_id}' is still PENDING after 0.1 s"):
        app.wait_for(job_id, timeout=0.1)
    assert app.get_job(job_id).status is JobStatus.PENDING  # type: ignore[union-attr]
    app.close()


def test_bad_arguments_are_refused_clearly(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    with pytest.raises(JobNotFoundError, match="No job 'nope' in the store"):
        app.wait_for("nope", timeout=1)
    job_id = app.enqueue("double", 3)
    with pytest.raises(ValueError, match=r"timeout=-1: give seconds >= 0"):
        app.wait_for(job_id, timeout=-1)
    app.close()


def test_a_store_outage_is_waited_out(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    job_id = app.enqueue("double", 6)
    read = app.store.get_job
    outage = {"reads_left": 3}

    def flaky_read(job_id: str) -> Any:
        if outage["reads_left"]:
            outage["reads_left"] -= 1
            raise StoreUnavailableError("connection refused (test outage)")
        return read(job_id)

    app.store.get_job = flaky_read  # type: ignore[method-assign]
    with app.worker():
        assert app.wait_for(job_id, timeout=30).result == 12
    assert outage["reads_left"] == 0
    app.close()


def test_result_returns_the_typed_value_or_raises_for_a_job_that_did_not_succeed(
    sqlite_url: str,
) -> None:
    app = _app(sqlite_url)
    ok_id, failed_id = app.enqueue("double", 50), app.enqueue("broken")
    canceled_id = app.enqueue("double", 1)
    assert app.cancel_job(canceled_id)
    function = app.job(name="double")(double)  # the registered function again
    failing = app.job(name="broken", max_retries=0)(broken)
    with app.worker():
        assert function.result(ok_id, timeout=30) == 100
        with pytest.raises(JobFailedError, match="the ledger is locked") as failed:
            failing.result(failed_id, timeout=30)
    assert failed.value.job.status is JobStatus.FAILED
    assert "second line" not in str(failed.value)  # the first line; job.last_error has all
    with pytest.raises(JobCanceledError) as canceled:
        function.result(canceled_id, timeout=5)
    assert canceled.value.job.status is JobStatus.CANCELED
    with pytest.raises(JobNotFoundError, match="is a 'broken' job, not a 'double' one"):
        function.result(failed_id, timeout=5)
    app.close()


def test_wait_for_async_keeps_the_loop_running(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    job_id = app.enqueue("double", 7)
    function = app.job(name="double")(double)

    async def main() -> tuple[int, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        job = await app.wait_for_async(job_id, timeout=30)
        value = await function.result_async(job_id, timeout=5)
        ticker.cancel()
        assert job.status is JobStatus.SUCCEEDED
        return value, ticks

    with app.worker():
        value, ticks = asyncio.run(main())
    assert value == 14
    assert ticks > 0
    app.close()


def _spy(read: Any, before: Any) -> Any:
    def spied(job_id: str) -> Any:
        before()
        return read(job_id)

    return spied


def _wait_in_thread(app: Ratchet, job_id: str) -> tuple[threading.Thread, list[Any]]:
    done: list[Any] = []
    waiter = threading.Thread(target=lambda: done.append(app.wait_for(job_id)), daemon=True)
    waiter.start()
    return waiter, done


def _slow_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of the store only every 60 s: only a wakeup can end a wait sooner."""
    monkeypatch.setattr(_waiting, "FIRST_READ_PAUSE_SECONDS", 60.0)
    monkeypatch.setattr(_waiting, "SLOWEST_READ_PAUSE_SECONDS", 60.0)


def test_an_end_on_another_node_wakes_the_waiter_through_the_coordinator(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The waiting node watches the job; the node that runs it announces its end over
    the coordinator (here the kit's in-process loopback transport)."""
    _slow_reads(monkeypatch)
    harness = LoopbackHarness()
    waiting = Ratchet(sqlite_url, coordinator=harness.create("node-waits"))
    waiting.job(name="double")(double)
    working = Ratchet(sqlite_url, coordinator=harness.create("node-works"), poll_burst_seconds=0.02)
    working.job(name="double")(double)
    job_id = waiting.enqueue("double", 9)
    waiter, done = _wait_in_thread(waiting, job_id)
    with working.worker():
        waiter.join(30)
    assert done and done[0].result == 18, "the remote end did not wake the waiter"
    waiting.close()
    working.close()
    harness.close()


def test_negative_control_a_worker_without_completion_hints_leaves_the_waiter_reading(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, with the working node on no coordinator: nothing announces the end, so
    the waiter still waits for its next read."""
    _slow_reads(monkeypatch)
    harness = LoopbackHarness()
    waiting = Ratchet(sqlite_url, coordinator=harness.create("node-waits"))
    waiting.job(name="double")(double)
    working = Ratchet(sqlite_url, coordinator="none", poll_burst_seconds=0.02)
    working.job(name="double")(double)
    job_id = waiting.enqueue("double", 9)
    waiter, done = _wait_in_thread(waiting, job_id)
    with working.worker():
        assert working.wait_for(job_id, timeout=30).status is JobStatus.SUCCEEDED
    waiter.join(2)
    assert waiter.is_alive() and not done, "something else woke the waiter"
    waiting._on_job_end_hint(job_id)  # end the wait (as an announcement would)
    waiter.join(30)
    assert done and done[0].result == 18
    waiting.close()
    working.close()
    harness.close()

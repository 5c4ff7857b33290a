"""Batches (issue #18): ``app.batch(name).for_each(items, fn)`` with
``then_on_batch_success`` / ``then_on_batch_failure`` / ``then_when_success_rate``
callbacks; ``app.get_batch`` progress; exactly one completion; ``ratchet batches``.

When one of these fails, look at ``ratchet._batches`` (what is stored),
``ratchet._engine.batches`` (the completion after each child's end and in the orphan
scan) and the store's ``SupportsBatches`` (certified by the kit's
``BatchRecordContracts``). Waits are failure bounds only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, Events, job_status, wait_until
from ratchet import BatchStatus, JobStatus, Ratchet, StreamingBatchProgress, current_job
from ratchet.cli import main
from ratchet.errors import ConfigurationError
from ratchet.events import BatchCompleted
from ratchet.stores.sqlite.store import SQLiteJobStore

BOUND = 60.0


@pytest.fixture
def app(sqlite_app: Ratchet) -> Ratchet:
    return sqlite_app


def batch_jobs(app: Ratchet, ran: list[tuple[str, Any]]) -> None:
    @app.job(name="square", max_retries=0)
    def square(n: int) -> int:
        if n < 0:
            raise ValueError(f"negative: {n}")
        return n * n

    @app.job(name="report")
    def report(label: str) -> None:
        previous = current_job().previous
        assert previous is not None
        ran.append((label, previous.value))


def test_a_batch_runs_every_child_then_its_success_callback_once(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    events = Events()
    app.on(BatchCompleted, events)
    batch_jobs(app, ran)
    batch_id = (
        app.batch("squares")
        .for_each(range(50), "square")
        .then_on_batch_success("report", "all good")
        .then_on_batch_failure("report", "some failed")
        .submit()
    )
    running = app.get_batch(batch_id)
    assert running is not None
    assert (running.status, running.total, running.completed, running.percent_done) == (
        BatchStatus.RUNNING,
        50,
        0,
        0.0,
    )
    app.run_until_idle(timeout=BOUND)
    done = app.get_batch(batch_id)
    assert done is not None
    assert (done.status, done.completed, done.failed, done.percent_done) == (
        BatchStatus.SUCCEEDED,
        50,
        0,
        100.0,
    )
    assert ran == [("all good", {"succeeded": 50, "failed": 0, "canceled": 0})]
    [completed] = events.of(BatchCompleted)
    assert (completed.job_id, completed.total, completed.succeeded) == (batch_id, 50, 50)
    children = [job for job in app.list_jobs(limit=200) if job.batch_id == batch_id]
    assert len(children) == 50 and all(c.status is JobStatus.SUCCEEDED for c in children)


def test_a_failed_child_fails_the_batch_and_the_rate_callback_can_match(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    batch_jobs(app, ran)
    items = [*range(19), -1]  # 95 % succeed
    strict = (
        app.batch("strict")
        .for_each(items, "square")
        .then_on_batch_success("report", "strict success")
        .then_when_success_rate(0.99, "report", "strict 99")
        .submit()
    )
    lenient = (
        app.batch("lenient")
        .for_each(items, "square")
        .then_on_batch_success("report", "lenient success")
        .then_when_success_rate(0.9, "report", "lenient 90")
        .then_on_batch_failure("report", "lenient failure")
        .submit()
    )
    app.run_until_idle(timeout=BOUND)
    assert sorted(label for label, _ in ran) == ["lenient 90"]
    for batch_id in (strict, lenient):
        batch = app.get_batch(batch_id)
        assert batch is not None
        assert (batch.status, batch.completed, batch.failed) == (BatchStatus.FAILED, 19, 1)
        assert batch.success_rate == pytest.approx(0.95)
    assert {job_status(app, d.id) for d in app.dependents(strict)} == {JobStatus.CANCELED}


def test_a_crash_between_the_last_child_and_the_completion_is_recovered(
    sqlite_url: str,
) -> None:
    """Children completed through the store (as a node that died right after each write
    leaves them): the running worker's orphan scan completes the batch and runs its
    callback."""
    ran: list[tuple[str, Any]] = []
    with Ratchet(sqlite_url, **FAST, orphan_scan_interval_minutes=0.2 / 60) as application:
        batch_jobs(application, ran)
        jobs = (
            application.batch("crashed")
            .for_each([1, 2], "square")
            .then_on_batch_success("report", "recovered")
            .build()
        )
        application.store.enqueue_many(jobs)
        for claimed in application.store.claim_due_jobs(
            node_id="dead-node", limit=10, priority_boost_seconds=0
        ):
            assert application.store.complete_job(
                claimed.id, claimed.claim_seq, result_json="1", result_type="int"
            )
        assert application.get_batch(jobs[0].id).status is BatchStatus.RUNNING  # type: ignore[union-attr]
        with application.worker():
            wait_until(lambda: [label for label, _ in ran] == ["recovered"], "the recovery")
        assert application.get_batch(jobs[0].id).status is BatchStatus.SUCCEEDED  # type: ignore[union-attr]


def test_bad_batches_are_refused_before_anything_is_stored(app: Ratchet) -> None:
    batch_jobs(app, [])
    with pytest.raises(ValueError, match="no items"):
        app.batch("empty").for_each([], "square").submit()
    with pytest.raises(ValueError, match="rate from 0 to 1"):
        app.batch("b").for_each([1], "square").then_when_success_rate(95, "report", "x")
    with pytest.raises(TypeError, match="for_each"):
        app.batch("b").max_retries(2)
    app.job(name="pair")(lambda a, b: a + b)
    with pytest.raises(Exception, match="pair"):  # each item is one argument: pair needs two
        app.batch("b").for_each([1, 2, 3], "pair").submit()
    with pytest.raises(ValueError, match="Batch name"):
        app.batch("")
    assert app.list_jobs() == []


def test_retry_settings_apply_to_every_child(app: Ratchet) -> None:
    batch_jobs(app, [])
    batch_id = app.batch("retried").for_each([-1, -2], "square").max_retries(2).submit()
    app.run_until_idle(timeout=BOUND)
    children = [job for job in app.list_jobs(limit=50) if job.batch_id == batch_id]
    assert [c.attempts for c in children] == [3, 3]
    assert app.get_batch(batch_id).status is BatchStatus.FAILED  # type: ignore[union-attr]


class NoBatchesStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    complete_batch = None  # type: ignore[assignment]  # hides the capability


def test_a_store_without_batches_refuses_one_and_stores_nothing(tmp_path: Path) -> None:
    with Ratchet(NoBatchesStore(str(tmp_path / "plain.db")), **FAST) as application:
        batch_jobs(application, [])
        with pytest.raises(ConfigurationError, match="SupportsBatches"):
            application.batch("b").for_each([1], "square").submit()
        assert application.list_jobs() == []


def test_ratchet_batches_list_and_show(
    app: Ratchet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch_jobs(app, [])
    batch_id = app.batch("nightly-import").for_each([1, 2, 3], "square").submit()
    monkeypatch.setenv("RATCHET_STORE_URL", f"sqlite:///{tmp_path / 'ratchet.db'}")
    assert main(["batches", "list"]) == 0
    listed = capsys.readouterr().out
    assert batch_id in listed and "nightly-import" in listed and "RUNNING" in listed
    app.run_until_idle(timeout=BOUND)
    assert main(["batches", "show", batch_id]) == 0
    shown = capsys.readouterr().out
    assert "SUCCEEDED" in shown and "3 of 3" in shown and "100%" in shown
    assert main(["batches", "show", "no-such-batch"]) == 1


def test_a_streaming_batch_stores_chunk_by_chunk_reading_lazily(app: Ratchet) -> None:
    """1,050 items in chunks of 100: the iterator is never read more than one chunk ahead
    of what is stored, every chunk reports progress, the record comes last with the
    total, and the batch then completes like any other."""
    ran: list[tuple[str, Any]] = []
    batch_jobs(app, ran)
    read = [0]
    stored_when_read: list[tuple[int, int]] = []
    progress_seen: list[StreamingBatchProgress] = []

    def items() -> Any:
        for n in range(1050):
            read[0] += 1
            yield n

    def on_progress(progress: StreamingBatchProgress) -> None:
        progress_seen.append(progress)
        stored_when_read.append((read[0], progress.stored))

    final = (
        app.streaming_batch("stream")
        .from_iterable(items())
        .process("square")
        .chunk_size(100)
        .on_progress(on_progress)
        .then_on_batch_success("report", "streamed")
        .start()
    )
    assert final.done and (final.stored, final.chunks, final.failed_chunks) == (1050, 11, 0)
    assert all(read_so_far - stored <= 100 for read_so_far, stored in stored_when_read)
    assert [p.stored for p in progress_seen][:3] == [100, 200, 300]
    batch = app.get_batch(final.batch_id)
    assert batch is not None and (batch.status, batch.total) == (BatchStatus.RUNNING, 1050)
    app.run_until_idle(timeout=BOUND)
    done = app.get_batch(final.batch_id)
    assert done is not None and (done.status, done.completed) == (BatchStatus.SUCCEEDED, 1050)
    assert ran == [("streamed", {"succeeded": 1050, "failed": 0, "canceled": 0})]


def test_a_failing_chunk_is_rolled_back_alone_and_reported(app: Ratchet) -> None:
    """Chunks of 10; the 5th holds a value that is not JSON: that chunk is left out (none
    of its 10 children stored), reported, and the batch totals the 40 others."""
    batch_jobs(app, [])
    items: list[Any] = list(range(50))
    items[44] = {1, 2}  # a set: not JSON
    final = app.streaming_batch("partial").from_iterable(items).process("square").chunk_size(10)
    report = final.start()
    assert (report.stored, report.chunks, report.failed_chunks, report.failed_items) == (
        40,
        4,
        1,
        10,
    )
    assert report.last_error is not None and "ArgumentsNotSerializable" in report.last_error
    stored = sorted(job.args[0] for job in app.list_jobs(limit=100) if job.batch_id)
    assert stored == [*range(40)]
    app.run_until_idle(timeout=BOUND)
    batch = app.get_batch(report.batch_id)
    assert batch is not None and (batch.total, batch.completed) == (40, 40)


def test_a_streaming_batch_with_nothing_stored_stores_no_record(app: Ratchet) -> None:
    batch_jobs(app, [])
    report = app.streaming_batch("empty").from_iterable([]).process("square").start()
    assert report.done and report.stored == 0
    assert app.get_batch(report.batch_id) is None and app.list_jobs() == []
    with pytest.raises(ValueError, match="chunk_size"):
        app.streaming_batch("x").chunk_size(0)
    with pytest.raises(TypeError, match="process"):
        app.streaming_batch("x").from_iterable([1]).start()
    with pytest.raises(TypeError, match="from_iterable"):
        app.streaming_batch("x").process("square").start()


def test_canceling_a_batch_cancels_its_callbacks_and_the_children_still_to_start(
    app: Ratchet,
) -> None:
    batch_jobs(app, [])
    batch_id = (
        app.batch("doomed").for_each([1, 2, 3], "square").then_on_batch_success("report", "x")
    ).submit()
    assert app.cancel_job(batch_id) is True
    batch = app.get_batch(batch_id)
    assert batch is not None and batch.status is BatchStatus.CANCELED
    children = [job for job in app.list_jobs(limit=50) if job.batch_id == batch_id]
    assert {c.status for c in children} == {JobStatus.CANCELED}
    assert {d.status for d in app.dependents(batch_id)} == {JobStatus.CANCELED}
    plain = app.enqueue("square", 4)
    assert app.cancel_job(plain) is True  # a plain job: nothing else changes

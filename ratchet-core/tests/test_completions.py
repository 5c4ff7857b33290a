"""Successes recorded in the background: batched writes, per-row answers, retries, and
backpressure; the worker's drain writes everything before it releases claims."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from ratchet import Ratchet
from ratchet._engine.completions import CompletionWriter
from ratchet._engine.outcomes import OutcomeRecorder
from ratchet.spi import ClaimedJob, Completion, JobStatus
from ratchet.stores.sqlite.store import SQLiteJobStore


def claimed(n: int) -> ClaimedJob:
    return ClaimedJob(
        id=f"job-{n}",
        name="t",
        target="t:t",
        args_json="[]",
        kwargs_json="{}",
        priority=2,
        attempt=1,
        max_retries=0,
        backoff="NONE",  # type: ignore[arg-type]
        backoff_ms=0,
        timeout_seconds=None,
        crash_count=0,
        claim_seq=n,
        params={},
        business_key=None,
        idempotency_key=None,
        recurring_id=None,
        scheduled_at=None,  # type: ignore[arg-type]
        claimed_at=None,  # type: ignore[arg-type]
    )


def completion(n: int) -> Completion:
    return Completion(job_id=f"job-{n}", claim_seq=n, result_json=None, result_type=None)


class SlowWriter:
    """Stands in for a store's complete_jobs: records every batch, answers ``True`` for even
    claim sequences, and takes ``delay`` seconds per write so batches can form."""

    def __init__(self, delay: float = 0.02, fail_first: int = 0) -> None:
        self.delay = delay
        self.fail_first = fail_first
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, completions: Sequence[Completion]) -> list[bool]:
        self.gate.wait(10)
        self.batches.append([c.job_id for c in completions])
        time.sleep(self.delay)
        if len(self.batches) <= self.fail_first:
            raise ConnectionError("server closed the connection")
        return [c.claim_seq % 2 == 0 for c in completions]


class Answers:
    def __init__(self) -> None:
        self.by_job: dict[str, bool | None] = {}

    def __call__(self, job: ClaimedJob, recorded: bool | None) -> None:
        assert job.id not in self.by_job, f"{job.id} reported twice"
        self.by_job[job.id] = recorded


def writer(
    store_writer: Any, answers: Answers, *, keep_trying: Any = lambda: True, **options: Any
) -> CompletionWriter:
    """A background writer whose writes are the outcome recorder's (retries, read-back)."""
    recorder = OutcomeRecorder(None, keep_trying=keep_trying)  # type: ignore[arg-type]
    return CompletionWriter(
        lambda batch: recorder.write_successes(store_writer, batch),
        on_recorded=answers,
        **options,
    )


def test_successes_share_writes_and_each_gets_its_own_answer() -> None:
    store_writer, answers = SlowWriter(), Answers()
    completions = writer(store_writer, answers)
    for n in range(40):
        completions.submit(claimed(n), completion(n))
    assert completions.flush(10)
    assert answers.by_job == {f"job-{n}": n % 2 == 0 for n in range(40)}
    written = [job for batch in store_writer.batches for job in batch]
    assert sorted(written) == sorted(f"job-{n}" for n in range(40))  # each exactly once
    assert len(store_writer.batches) < 40, "queued successes should have shared writes"
    completions.close()


def test_a_lone_success_is_written_at_once_on_its_own() -> None:
    store_writer, answers = SlowWriter(delay=0), Answers()
    completions = writer(store_writer, answers)
    completions.submit(claimed(2), completion(2))
    assert completions.flush(5)
    completions.submit(claimed(3), completion(3))
    assert completions.flush(5)
    assert store_writer.batches == [["job-2"], ["job-3"]]
    assert answers.by_job == {"job-2": True, "job-3": False}
    completions.close()


def test_batches_never_exceed_the_limit() -> None:
    store_writer, answers = SlowWriter(), Answers()
    store_writer.gate.clear()
    completions = writer(store_writer, answers, max_batch=4)
    for n in range(10):
        completions.submit(claimed(n), completion(n))
    store_writer.gate.set()
    assert completions.flush(10)
    assert max(len(batch) for batch in store_writer.batches) <= 4
    assert len(answers.by_job) == 10
    completions.close()


def test_a_failed_write_is_retried_until_the_store_answers() -> None:
    store_writer, answers = SlowWriter(fail_first=2), Answers()
    completions = writer(store_writer, answers)
    completions.submit(claimed(4), completion(4))
    assert completions.flush(10)
    assert answers.by_job == {"job-4": True}
    assert len(store_writer.batches) == 3
    completions.close()


def test_a_write_given_up_reports_unknown() -> None:
    store_writer, answers = SlowWriter(fail_first=99), Answers()
    completions = writer(store_writer, answers, keep_trying=lambda: False)
    completions.submit(claimed(4), completion(4))
    assert completions.flush(10)
    assert answers.by_job == {"job-4": None}
    completions.close()


def test_backpressure_blocks_submitters_once_max_pending_wait() -> None:
    store_writer, answers = SlowWriter(), Answers()
    store_writer.gate.clear()  # the store hangs
    completions = writer(store_writer, answers, max_batch=2, max_pending=3)
    for n in range(3):
        completions.submit(claimed(n), completion(n))
    blocked = threading.Thread(target=completions.submit, args=(claimed(9), completion(9)))
    blocked.start()
    blocked.join(0.3)
    assert blocked.is_alive(), "a fourth pending success should have to wait"
    store_writer.gate.set()
    blocked.join(10)
    assert not blocked.is_alive()
    assert completions.flush(10) and len(answers.by_job) == 4
    completions.close()


def test_a_store_answering_the_wrong_number_of_flags_is_an_error() -> None:
    answers = Answers()
    completions = writer(lambda c: [], answers, keep_trying=lambda: False)
    completions.submit(claimed(1), completion(1))
    assert completions.flush(5)
    assert answers.by_job == {"job-1": None}
    completions.close()


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        writer(SlowWriter(), Answers(), max_batch=0)


def test_the_worker_records_successes_in_the_background(tmp_path: Any) -> None:
    app = Ratchet(f"sqlite:///{tmp_path / 'bg.db'}", coordinator="none", concurrency=8)

    @app.job()
    def work(n: int) -> int:
        time.sleep(0.002)
        return n * 2

    ids = app.enqueue_many(work, [(n,) for n in range(120)])
    assert app.run_until_idle(timeout=60) == 120
    jobs = [app.get_job(job_id) for job_id in ids]
    assert all(job is not None and job.status is JobStatus.SUCCEEDED for job in jobs)
    assert sorted(job.result for job in jobs if job is not None) == [n * 2 for n in range(120)]


def test_a_drain_writes_pending_successes_before_releasing_claims(tmp_path: Any) -> None:
    """The writer is held up; stop() must still record every finished job as SUCCEEDED
    (not release it to run again)."""
    store = SQLiteJobStore(str(tmp_path / "drain.db"))
    held = threading.Event()
    write = store.complete_jobs

    def slow_complete_jobs(completions: Sequence[Completion]) -> list[bool]:
        held.wait(0.5)
        return write(completions)

    store.complete_jobs = slow_complete_jobs  # type: ignore[method-assign]
    app = Ratchet(store, coordinator="none", concurrency=4)

    @app.job(name="quick")
    def quick() -> None:
        return None

    ids = [app.enqueue("quick") for _ in range(8)]
    worker = app.worker().start()
    deadline = time.monotonic() + 10
    while worker.executor.completed < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop(timeout=5)
    assert {app.get_job(i).status for i in ids} == {JobStatus.SUCCEEDED}  # type: ignore[union-attr]
    assert worker.stats.succeeded == 8


def test_a_batch_size_of_one_writes_each_success_itself(tmp_path: Any) -> None:
    app = Ratchet(f"sqlite:///{tmp_path / 'alone.db'}", coordinator="none", completion_batch_size=1)
    with app.worker() as worker:
        assert worker.recorder.completions is None

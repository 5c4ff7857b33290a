"""A failed outcome write is retried while the node holds its claims, and a write whose
answer was lost is recognised as applied instead of being reported stale."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from ratchet import BackoffPolicy, Ratchet
from ratchet.errors import StoreUnavailableError
from ratchet.spi import Completion, JobStatus
from ratchet.stores.sqlite.store import SQLiteJobStore


class FlakyOutcomeStore(SQLiteJobStore):
    """The embedded store whose outcome writes fail ``failures`` times first.

    With ``lost_reply`` the failing calls are applied before they raise, as when the
    connection drops after the server committed but before its answer arrived.
    """

    def __init__(self, path: str, *, failures: int, lost_reply: bool = False) -> None:
        super().__init__(path)
        self.failures = failures
        self.lost_reply = lost_reply
        self.calls = 0

    def _flaky(self, write: Any) -> Any:
        self.calls += 1
        if self.calls > self.failures:
            return write()
        if self.lost_reply:
            write()
        raise StoreUnavailableError("lost postgresql://app:hunter2@db/app (password=hunter2)")

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        return self._flaky(lambda: super(FlakyOutcomeStore, self).complete_jobs(completions))  # type: ignore[no-any-return]

    def complete_job(self, job_id: str, claim_seq: int, **kwargs: Any) -> bool:
        return self._flaky(  # type: ignore[no-any-return]
            lambda: super(FlakyOutcomeStore, self).complete_job(job_id, claim_seq, **kwargs)
        )

    def schedule_retry(self, job_id: str, claim_seq: int, **kwargs: Any) -> bool:
        return self._flaky(  # type: ignore[no-any-return]
            lambda: super(FlakyOutcomeStore, self).schedule_retry(job_id, claim_seq, **kwargs)
        )


def make_app(store: SQLiteJobStore, **options: Any) -> Ratchet:
    app = Ratchet(store, coordinator="none", **options)

    @app.job(name="ok")
    def ok() -> str:
        return "done"

    @app.job(name="boom", max_retries=3, backoff=BackoffPolicy.NONE)
    def boom() -> None:
        raise ValueError("boom")

    return app


@pytest.mark.parametrize("batch", [100, 1], ids=["background-batches", "one-at-a-time"])
def test_success_is_recorded_after_the_store_comes_back(
    tmp_path: Any, batch: int, caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyOutcomeStore(str(tmp_path / "flaky.db"), failures=3)
    app = make_app(store, completion_batch_size=batch)
    job_id = app.enqueue("ok")
    with caplog.at_level(logging.WARNING, logger="ratchet.worker"):
        app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and (job.status, job.result) == (JobStatus.SUCCEEDED, "done")
    assert store.calls == 4
    assert "Could not record the outcome" in caplog.text
    assert "hunter2" not in caplog.text


def test_a_write_applied_before_its_answer_was_lost_counts_as_recorded(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyOutcomeStore(str(tmp_path / "lost.db"), failures=1, lost_reply=True)
    app = make_app(store)
    job_id = app.enqueue("ok")
    with caplog.at_level(logging.INFO, logger="ratchet.worker"):
        app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.SUCCEEDED
    assert "no longer current" not in caplog.text  # not mistaken for a stale claim
    assert "was kept" in caplog.text
    [execution] = app.executions(job_id)
    assert execution.message is None  # no late-outcome note on our own record


def test_a_retry_decision_survives_a_failed_write(tmp_path: Any) -> None:
    store = FlakyOutcomeStore(str(tmp_path / "retry.db"), failures=2)
    app = make_app(store)
    job_id = app.enqueue("boom")
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and (job.status, job.attempts) == (JobStatus.FAILED, 4)


def test_negative_control_without_retries_the_claim_is_stranded(tmp_path: Any) -> None:
    """What the retry prevents: with the runner told to give up at once, the write error
    leaves the job RUNNING under a live node, where no recovery will touch it."""
    store = FlakyOutcomeStore(str(tmp_path / "stranded.db"), failures=1)
    app = make_app(store)
    job_id = app.enqueue("ok")
    worker = app.worker()
    worker.recorder.keep_trying = lambda: False  # for single and batched writes alike
    worker.start(poll=False)
    assert worker.recorder.completions is not None
    try:
        assert len(worker.claim_once()) == 1
        assert worker.executor.wait_until_idle(10)
        assert worker.flush_outcomes(10)
        job = app.get_job(job_id)
        assert job is not None and job.status is JobStatus.RUNNING
    finally:
        worker.stop()

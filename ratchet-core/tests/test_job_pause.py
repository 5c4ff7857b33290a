"""Paused jobs (issue #19): ``app.pause_job`` / ``app.resume_job``, the PAUSED status in
the API and ``ratchet jobs pause|resume``.

When one of these fails, look at the store's ``pause_job`` / ``resume_job``
(``SupportsJobPause``, certified by the kit's ``JobPauseContracts``) and
``Ratchet.pause_job`` / ``resume_job``. Waits are failure bounds only.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import job_status
from ratchet import JobStatus, Ratchet
from ratchet.cli import main
from ratchet.errors import BusinessKeyConflictError
from ratchet.events import JobCanceled

BOUND = 30.0


@pytest.fixture
def app(sqlite_app: Ratchet) -> Ratchet:
    """The application on a SQLite file (the CLI tests open the same file)."""
    return sqlite_app


def test_a_paused_job_waits_while_others_run_and_runs_once_resumed(app: Ratchet) -> None:
    ran: list[int] = []

    @app.job(name="work")
    def work(n: int) -> None:
        ran.append(n)

    held, other = work.enqueue(1), work.enqueue(2)
    assert app.pause_job(held) is True
    assert app.pause_job(held) is False  # already paused
    assert job_status(app, held) is JobStatus.PAUSED
    assert [job.id for job in app.list_jobs(status=JobStatus.PAUSED)] == [held]
    with app.worker():
        app.wait_for(other, timeout=BOUND)
        time.sleep(0.3)  # a few more polls: the paused job must still be waiting
        assert job_status(app, held) is JobStatus.PAUSED
        assert app.resume_job(held) is True
        app.wait_for(held, timeout=BOUND)
    assert ran == [2, 1]
    assert app.resume_job(held) is False  # it ran: nothing to resume


def test_only_a_pending_job_pauses(app: Ratchet) -> None:
    @app.job(name="work")
    def work() -> None:
        pass

    done = work.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert app.pause_job(done) is False
    assert app.pause_job("no-such-job") is False
    assert app.resume_job("no-such-job") is False
    later = app.builder(work).delay(3600).submit()
    assert app.pause_job(later) is True  # a job due later pauses too
    assert app.resume_job(later) is True
    assert job_status(app, later) is JobStatus.PENDING


def test_a_paused_job_holds_its_business_key_and_can_be_canceled(app: Ratchet) -> None:
    @app.job(name="refund")
    def refund(order: int) -> None:
        pass

    canceled: list[JobCanceled] = []
    app.on(JobCanceled, canceled.append)
    held = app.builder(refund, 42).business_key("refund-42").submit()
    assert app.pause_job(held)
    with pytest.raises(BusinessKeyConflictError):
        app.builder(refund, 42).business_key("refund-42").submit()
    assert app.cancel_job(held) is True
    assert job_status(app, held) is JobStatus.CANCELED
    assert [event.job_id for event in canceled] == [held]
    assert app.builder(refund, 42).business_key("refund-42").submit()  # the key is free


def test_the_cli_pauses_lists_and_resumes_a_job(
    app: Ratchet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("RATCHET_STORE_URL", f"sqlite:///{tmp_path / 'ratchet.db'}")
    app.job(name="work")(lambda: None)
    job_id = app.builder("work").delay(3600).submit()
    assert main(["jobs", "pause", job_id]) == 0
    assert "is PAUSED" in capsys.readouterr().out
    assert job_status(app, job_id) is JobStatus.PAUSED
    assert main(["jobs", "list", "--status", "paused"]) == 0
    assert job_id in capsys.readouterr().out
    assert main(["jobs", "pause", job_id]) == 1
    assert "is PAUSED; only PENDING jobs can be paused" in capsys.readouterr().err
    assert main(["jobs", "resume", job_id]) == 0
    assert "PENDING again" in capsys.readouterr().out
    assert main(["jobs", "resume", job_id]) == 1
    assert "only PAUSED jobs can be resumed" in capsys.readouterr().err
    assert main(["jobs", "pause", "no-such-job"]) != 0
    assert job_status(app, job_id) is JobStatus.PENDING

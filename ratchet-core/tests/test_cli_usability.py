"""CLI output and options a newcomer relies on: a succeeded job's earlier error, tag
filters in any case, cancelling a decorator's schedule, and ``ratchet worker --store``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import FAST
from ratchet import BackoffPolicy, JobStatus, Ratchet, current_job
from ratchet._engine.recurring import RecurringScheduler
from ratchet.cli import _output, main
from ratchet.cli._commands import load_app


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_url: str) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATCHET_STORE_URL", sqlite_url)
    return sqlite_url


def flaky() -> str:
    if current_job().attempt == 1:
        raise ConnectionError("gateway timed out")
    return "paid"


def test_a_succeeded_job_labels_its_earlier_error(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ratchet jobs show` must not present an earlier attempt's error as the outcome of a
    SUCCEEDED job; look at _output.last_error_heading."""
    app = Ratchet(cli_env, **FAST)
    job = app.job(max_retries=2, backoff=BackoffPolicy.NONE)(flaky)
    never = app.job(name="never", max_retries=0)(lambda: None)
    job_id = job.enqueue()
    quiet_id = never.enqueue()
    app.run_until_idle(timeout=30)
    assert app.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]

    assert main(["jobs", "show", job_id]) == 0
    shown = capsys.readouterr().out
    assert "last error:" not in shown
    assert "error of attempt 1 (since succeeded):\nConnectionError: gateway timed out" in shown
    assert main(["jobs", "show", quiet_id]) == 0
    quiet = capsys.readouterr().out
    assert "last error" not in quiet and "error of" not in quiet  # it never failed
    app.close()


def test_a_failed_job_still_shows_its_last_error(app: Ratchet) -> None:
    job = app.job(name="boom", max_retries=0)(lambda: 1 / 0)
    job_id = job.enqueue()
    app.run_until_idle(timeout=30)
    failed = app.get_job(job_id)
    assert failed is not None and failed.status is JobStatus.FAILED
    shown = _output.job_details(failed, app.executions(job_id))
    assert "\nlast error:\nZeroDivisionError" in shown


def test_jobs_table_shows_no_earlier_error_for_a_succeeded_job_without_result(
    app: Ratchet,
) -> None:
    """A SUCCEEDED job that returned None has an empty RESULT / ERROR cell."""
    calls: list[int] = []

    def once_failing() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("gateway timed out")

    job_id = app.job(max_retries=1, backoff=BackoffPolicy.NONE)(once_failing).enqueue()
    app.run_until_idle(timeout=30)
    succeeded = app.get_job(job_id)
    assert succeeded is not None and succeeded.status is JobStatus.SUCCEEDED
    assert succeeded.last_error  # kept in the store for the record
    assert "gateway" not in _output.jobs_table([succeeded])


def test_tag_filters_are_normalised_like_stored_tags(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tags are stored stripped and lower-cased; a filter written 'Billing' must find them
    through the API and the CLI (look at _jobs.normalize_tag and its callers)."""
    app = Ratchet(cli_env, **FAST)
    work = app.job(name="work")(lambda: None)
    tagged = work.builder().tags("Billing").submit()
    work.enqueue()
    assert [j.id for j in app.list_jobs(tag=" Billing ")] == [tagged]
    assert [j.id for j in app.list_jobs(tag="billing")] == [tagged]
    assert main(["jobs", "list", "--tag", "BILLING"]) == 0
    out = capsys.readouterr().out
    assert tagged in out and out.count("work") == 1
    app.close()


def test_recurring_cancel_says_a_decorator_schedule_comes_back(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schedule from @app.recurring is saved again at the next worker start, so the CLI
    must say so when it cancels one, and only then."""
    app = Ratchet(cli_env, **FAST)

    @app.recurring("0 2 * * *", id="nightly-cleanup", tags=["Ops"])
    def cleanup() -> None: ...

    app.schedule_recurring(app.job(name="sweep")(lambda: None), "0 3 * * *", id="sweeper")
    # What a worker does at start:
    RecurringScheduler(app._node_context(), max_sleep=1).sync_definitions()

    assert main(["recurring", "cancel", "sweeper"]) == 0
    out = capsys.readouterr().out
    assert "Stopped recurring schedule 'sweeper'." in out and "decorator" not in out
    assert main(["recurring", "cancel", "nightly-cleanup"]) == 0
    out = capsys.readouterr().out
    assert "Stopped recurring schedule 'nightly-cleanup'." in out
    assert "'nightly-cleanup' came from an @app.recurring decorator" in out
    assert "remove the decorator" in out

    # The next worker start:
    RecurringScheduler(app._node_context(), max_sleep=1).sync_definitions()
    assert [d.id for d in app.list_recurring()] == ["nightly-cleanup"]
    assert main(["recurring", "cancel", "--tag", "OPS"]) == 0
    out = capsys.readouterr().out
    assert "Stopped 1 recurring schedule(s)" in out and "came from an @app.recurring" in out
    app.close()


ENV_APP = """
from ratchet import Ratchet

app = Ratchet(poll_burst_seconds=0.02, poll_idle_max_seconds=0.2, coordinator="none")


@app.job(name="double")
def double(n):
    return n * 2
"""


def test_load_app_with_a_store_url_sets_the_variable_only_for_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATCHET_STORE_URL", "sqlite:///elsewhere.db")
    (tmp_path / "env_app_load.py").write_text(ENV_APP)
    app = load_app("env_app_load:app", store_url=sqlite_url)
    assert app.store_url == sqlite_url
    assert os.environ["RATCHET_STORE_URL"] == "sqlite:///elsewhere.db"
    app.close()


def test_worker_store_is_refused_for_an_app_that_names_its_own_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_STORE_URL", raising=False)
    own = f"sqlite:///{tmp_path / 'own.db'}"
    (tmp_path / "fixed_store_app.py").write_text(
        textwrap.dedent(f"""
        from ratchet import Ratchet
        app = Ratchet({own!r}, coordinator="none")
        """)
    )
    other = "sqlite:///other.db"
    assert main(["worker", "fixed_store_app:app", "--store", other]) == 2
    err = capsys.readouterr().err
    assert f"--store {other!r} cannot change the store of APP 'fixed_store_app:app'" in err
    assert "Ratchet.from_env()" in err and "Drop --store" in err
    assert not (tmp_path / "other.db").exists()


def test_worker_store_runs_an_env_configured_app_on_that_store(tmp_path: Path) -> None:
    """`ratchet worker APP --store URL` (as the README's CLI section promises) runs the
    jobs of URL, not those of the default sqlite:///ratchet.db in the working directory."""
    (tmp_path / "env_app.py").write_text(ENV_APP)
    sqlite_url = f"sqlite:///{tmp_path / 'chosen.db'}"
    producer = Ratchet(sqlite_url, coordinator="none")
    job_id = producer.enqueue(producer.job(name="double")(lambda n: None), 21)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
    worker = subprocess.Popen(
        [sys.executable, "-m", "ratchet.cli", "worker", "env_app:app", "--store", sqlite_url],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while producer.get_job(job_id).status is not JobStatus.SUCCEEDED:  # type: ignore[union-attr]
            assert worker.poll() is None, worker.communicate()[0]
            assert time.monotonic() < deadline, "the worker never ran the job"
            time.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    finally:
        worker.kill()
    assert worker.returncode == 0, output
    assert producer.get_job(job_id).result == 42  # type: ignore[union-attr]
    assert not (tmp_path / "ratchet.db").exists()
    producer.close()

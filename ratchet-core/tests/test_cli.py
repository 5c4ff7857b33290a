"""The ``ratchet`` command, in-process and as a real subprocess."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ratchet import JobStatus, Ratchet
from ratchet.cli import main
from ratchet.spi import SupportsResourcePermits


def write_app(tmp_path: Path, module: str, store_url: str, body: str = "") -> str:
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""
        from ratchet import Ratchet, BackoffPolicy
        app = Ratchet({store_url!r}, poll_burst_seconds=0.02, poll_idle_max_seconds=0.2,
                      coordinator="none")

        @app.job(name="add")
        def add(a, b):
            return a + b

        @app.job(name="fail", max_retries=0)
        def fail():
            raise RuntimeError("always")
        """)
        + textwrap.dedent(body)
    )
    return f"{module}:app"


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_url: str) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATCHET_STORE_URL", sqlite_url)
    return sqlite_url


def test_enqueue_list_show_retry_cancel(
    cli_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_ref = write_app(tmp_path, "cli_app_one", cli_env)
    assert (
        main(["enqueue", app_ref, "add", "--args", "[2, 3]", "--priority", "high", "--tag", "Math"])
        == 0
    )
    added = capsys.readouterr().out.strip()
    assert main(["enqueue", app_ref, "fail"]) == 0
    failed = capsys.readouterr().out.strip()
    assert main(["enqueue", app_ref, "add", "--kwargs", '{"a": 1, "b": 1}', "--delay", "3600"]) == 0
    delayed = capsys.readouterr().out.strip()

    app = Ratchet(cli_env, coordinator="none")
    app.job(name="add")(lambda a, b: a + b)
    app.job(name="fail", max_retries=0)(lambda: 1 / 0)
    app.run_until_idle(timeout=30)

    assert main(["jobs", "list", "--tag", "math"]) == 0
    out = capsys.readouterr().out
    assert added in out and "SUCCEEDED" in out and "HIGH" in out and failed not in out
    assert main(["jobs", "show", added]) == 0
    assert "result: 5 (int)" in capsys.readouterr().out
    assert main(["dlq", "list"]) == 0
    assert failed in capsys.readouterr().out
    assert main(["jobs", "cancel", added]) == 1
    assert "only PENDING, PAUSED or RUNNING jobs can be canceled" in capsys.readouterr().err
    assert main(["jobs", "cancel", delayed]) == 0
    assert main(["dlq", "retry", failed]) == 0
    assert app.get_job(failed).status is JobStatus.PENDING  # type: ignore[union-attr]
    assert main(["jobs", "show", "nope"]) == 2
    assert "No job has id 'nope'" in capsys.readouterr().err


def test_dlq_retry_all_and_purge(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    app = Ratchet(cli_env, coordinator="none")
    fail = app.job(name="fail", max_retries=0)(lambda: 1 / 0)
    for _ in range(3):
        fail.enqueue()
    app.run_until_idle(timeout=30)
    assert main(["dlq", "retry", "--all"]) == 0
    assert "3 dead-lettered job(s) are PENDING again." in capsys.readouterr().out
    app.run_until_idle(timeout=30)
    assert main(["dlq", "purge", "--older-than-days", "0"]) == 0
    assert "Purged 3" in capsys.readouterr().out
    assert app.list_jobs() == []


def test_enqueue_unknown_job_and_bad_json(
    cli_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_ref = write_app(tmp_path, "cli_app_two", cli_env)
    assert main(["enqueue", app_ref, "substract"]) == 2
    assert (
        "Job 'substract' is not registered by 'cli_app_two:app'. Registered jobs: add, fail."
        in capsys.readouterr().err
    )
    assert main(["enqueue", app_ref, "add", "--args", "[1,"]) == 2
    assert "--args '[1,' is not valid JSON" in capsys.readouterr().err
    assert main(["enqueue", app_ref, "add", "--args", '{"a": 1}']) == 2
    assert "must be a JSON list" in capsys.readouterr().err


def test_worker_with_an_app_that_does_not_import(
    cli_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken_app.py").write_text("import not_a_real_dependency\n")
    assert main(["worker", "broken_app:app"]) == 2
    err = capsys.readouterr().err
    assert "APP 'broken_app:app' does not import" in err and "not_a_real_dependency" in err
    assert main(["worker", "no_colon"]) == 2
    assert "must be 'module:attribute'" in capsys.readouterr().err
    write_app(tmp_path, "cli_app_three", cli_env)
    assert main(["worker", "cli_app_three:add"]) == 2
    assert "not a ratchet.Ratchet application" in capsys.readouterr().err


def test_plugins_nodes_and_schema(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"memory\s+ratchet-core\s+loaded\s+store memory \(memory://\)", out)
    assert re.search(r"sqlite\s+ratchet-core\s+loaded\s+store sqlite \(sqlite://\)", out)
    assert "Active store: sqlite" in out
    node = Ratchet(cli_env, node_id="node-x", coordinator="none")
    with node.worker():
        assert main(["nodes"]) == 0
        assert "node-x" in capsys.readouterr().out
    assert main(["nodes"]) == 0  # a worker that stopped cleanly leaves the list
    assert "node-x" not in capsys.readouterr().out
    assert main(["schema", "show", "sqlite"]) == 0
    assert "CREATE TABLE ratchet_job" in capsys.readouterr().out
    assert main(["schema", "show", "mongo"]) == 2
    assert "Did you mean 'mongodb'?" in capsys.readouterr().err


def test_schema_apply_creates_then_reports_up_to_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert main(["schema", "apply", url]) == 0
    assert "Applied: 0001_initial.sql" in capsys.readouterr().out
    assert main(["schema", "apply", url]) == 0
    assert "is up to date" in capsys.readouterr().out


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_demo_runs_to_completion(tmp_path: Path) -> None:
    result = run_cli("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Demo finished: every job ended as expected." in result.stdout
    for story in (
        "succeeds at once",
        "fails twice, then succeeds",
        "exhausts its retries",
        "delayed by 2 s",
    ):
        assert story in result.stdout


def test_worker_process_drains_on_sigterm(tmp_path: Path, sqlite_url: str) -> None:
    """A real `ratchet worker` runs jobs, then SIGTERM releases a long job without charge."""
    write_app(
        tmp_path,
        "sig_app",
        sqlite_url,
        body="""
        import time
        @app.job(name="slow")
        def slow():
            time.sleep(30)
        """,
    )
    env = {**os.environ, "RATCHET_SHUTDOWN_TIMEOUT_SECONDS": "0.5", "PYTHONPATH": str(tmp_path)}
    app = Ratchet(sqlite_url, coordinator="none")
    add = app.job(name="add")(lambda a, b: a + b)
    slow = app.job(name="slow")(lambda: None)
    quick_id, slow_id = add.enqueue(1, 2), slow.enqueue()
    worker = subprocess.Popen(
        [sys.executable, "-m", "ratchet.cli", "worker", "sig_app:app"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while app.get_job(slow_id).status is not JobStatus.RUNNING:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "worker never claimed the slow job"
            time.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    finally:
        worker.kill()
    assert worker.returncode == 0, output
    assert app.get_job(quick_id).result == 3  # type: ignore[union-attr]
    slow_job = app.get_job(slow_id)
    assert slow_job is not None
    assert (slow_job.status, slow_job.attempts, slow_job.crash_count) == (JobStatus.PENDING, 0, 0)
    assert "released 1 claim" in output


def test_recurring_list_and_cancel(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    app = Ratchet(cli_env, coordinator="none")
    work = app.job(name="work")(lambda: None)
    app.schedule_recurring(work, "0 2 * * *", id="nightly", tags=["ops"])
    app.schedule_recurring(work, "0 3 * * *", id="other", tags=["ops"])
    assert main(["recurring", "list"]) == 0
    out = capsys.readouterr().out
    assert "nightly" in out and "0 2 * * *" in out and "fire_once" in out
    assert main(["recurring", "pause", "nightly"]) == 0
    assert "Paused recurring schedule 'nightly'" in capsys.readouterr().out
    assert main(["recurring", "list"]) == 0
    nightly = next(line for line in capsys.readouterr().out.splitlines() if "nightly" in line)
    assert "paused" in nightly
    assert [d.paused for d in app.list_recurring() if d.id == "nightly"] == [True]
    assert main(["recurring", "resume", "nightly"]) == 0
    assert main(["recurring", "resume", "weekly"]) == 2
    assert "No recurring schedule is saved under 'weekly'" in capsys.readouterr().err
    assert [d.paused for d in app.list_recurring() if d.id == "nightly"] == [False]
    assert main(["recurring", "cancel", "nightly"]) == 0
    assert main(["recurring", "cancel", "nightly"]) == 1
    assert main(["recurring", "cancel", "--tag", "ops"]) == 0
    assert "Stopped 1 recurring schedule(s) tagged 'ops'." in capsys.readouterr().out
    assert app.list_recurring() == []


def test_breakers_lists_settings_and_guarded_jobs(
    tmp_path: Path, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    body = """
    app.configure_circuit_breaker("stripe", profile="EXTERNAL_API", wait_seconds=5)

    @app.job(name="charge", circuit_breaker="stripe")
    def charge():
        pass

    @app.job(name="mail", circuit_breaker="smtp")
    def mail():
        pass
    """
    app_ref = write_app(tmp_path, "cli_app_breakers", cli_env, body)
    assert main(["breakers", app_ref]) == 0
    out = capsys.readouterr().out
    stripe = next(line for line in out.splitlines() if line.startswith("stripe"))
    assert "60%" in stripe and "5/50" in stripe and "5 s" in stripe and "charge" in stripe
    smtp = next(line for line in out.splitlines() if line.startswith("smtp"))
    assert "50%" in smtp and "30 s" in smtp and "mail" in smtp  # DEFAULT, never configured
    assert "ratchet_circuit_breaker_state" in out
    plain = write_app(tmp_path, "cli_app_no_breakers", cli_env)
    assert main(["breakers", plain]) == 0
    assert "has no circuit breakers" in capsys.readouterr().out


def test_resources_lists_limits_the_stored_limit_and_the_holders(
    tmp_path: Path, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ratchet resources APP``: each resource APP configures or its jobs name, with
    APP's limit, the store's (only once a worker wrote it), the retry delay, the jobs and
    the claims holding permits now."""
    body = """
    app.configure_resource("payments-api", max_concurrent=2, retry_delay_ms=750)

    @app.job(name="charge", resource="payments-api")
    def charge():
        pass

    @app.job(name="export", resource="licence")
    def export():
        pass
    """
    app_ref = write_app(tmp_path, "cli_app_resources", cli_env, body)
    assert main(["resources", app_ref]) == 0
    out = capsys.readouterr().out
    payments = next(line for line in out.splitlines() if line.startswith("payments-api"))
    assert payments.split()[:4] == ["payments-api", "2", "-", "750"], payments
    assert "charge" in payments
    licence = next(line for line in out.splitlines() if line.startswith("licence"))
    assert licence.split()[:3] == ["licence", "-", "-"] and "export" in licence

    app = Ratchet(cli_env, coordinator="none")
    store = app.store
    assert isinstance(store, SupportsResourcePermits)
    store.configure_resource("payments-api", max_concurrent=3)
    job = app.enqueue(app.job(name="held")(lambda: None))
    claimed = store.claim_due_jobs(node_id="node-x", limit=1, priority_boost_seconds=0)
    assert store.acquire_permit("payments-api", job, claimed[0].claim_seq, node_id="node-x")
    assert main(["resources", app_ref]) == 0
    payments = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("payments-api")
    )
    assert payments.split()[2] == "3" and f"{job} (node-x)" in payments, payments
    plain = write_app(tmp_path, "cli_app_no_resources", cli_env)
    assert main(["resources", plain]) == 0
    assert "has no resources" in capsys.readouterr().out


def test_queues_list_pause_resume_and_enqueue_into_a_queue(
    tmp_path: Path, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app_ref = write_app(tmp_path, "cli_app_queues", cli_env)
    assert main(["enqueue", app_ref, "add", "--args", "[1, 2]", "--queue", "emails"]) == 0
    job_id = capsys.readouterr().out.strip()
    assert main(["jobs", "cancel", job_id]) == 0
    assert main(["queues", "list"]) == 0
    assert "No queue has pending or running jobs" in capsys.readouterr().out
    assert main(["enqueue", app_ref, "add", "--args", "[1, 2]", "--queue", "emails"]) == 0
    job_id = capsys.readouterr().out.strip()
    assert main(["enqueue", app_ref, "add", "--args", "[1, 2]", "--queue", "bad name"]) == 2
    assert "Queue name 'bad name'" in capsys.readouterr().err
    assert main(["jobs", "show", job_id]) == 0
    assert re.search(r"queue: emails", capsys.readouterr().out)
    assert main(["queues", "pause", "emails"]) == 0
    assert "Paused queue 'emails'" in capsys.readouterr().out
    assert main(["queues", "pause", "emails"]) == 0
    assert "already paused" in capsys.readouterr().out
    assert main(["queues", "list"]) == 0
    emails = next(line for line in capsys.readouterr().out.splitlines() if "emails" in line)
    assert emails.split() == ["emails", "1", "0", "paused"]
    assert main(["queues", "resume", "emails"]) == 0
    assert "Resumed queue 'emails'" in capsys.readouterr().out
    assert main(["queues", "resume", "emails"]) == 0
    assert "was not paused" in capsys.readouterr().out
    assert main(["queues", "pause", "no spaces"]) == 2


def test_worker_refuses_a_bad_queue_list(
    tmp_path: Path, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app_ref = write_app(tmp_path, "cli_app_bad_queues", cli_env)
    assert main(["worker", app_ref, "--queues", "emails:0", "--burst"]) == 2
    assert "--queues: 'emails:0' caps the queue at '0'" in capsys.readouterr().err

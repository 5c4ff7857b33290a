"""``ratchet.contrib.flask.RatchetFlask``: configuration from ``app.config``, job bodies
inside the application context on real workers, ``flask ratchet worker``, and
``examples/flask`` run the way its README says."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from flask import Flask, current_app

from conftest import BOUND, FAST, import_file, wait_until
from ratchet import JobStatus, Ratchet
from ratchet.contrib import flask as ratchet_flask
from ratchet.contrib.flask import EXTENSION_KEY, RatchetFlask, options_from_config
from ratchet.errors import ConfigurationError
from ratchet_tck.servers import free_port

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE = REPOSITORY / "examples" / "flask"


def finished(app: Ratchet, job_id: str) -> bool:
    job = app.get_job(job_id)
    return job is not None and job.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)


def flask_app(sqlite_url: str, **config: object) -> Flask:
    app = Flask("ratchet_flask_test")
    app.config.update(
        RATCHET_STORE_URL=sqlite_url,
        RATCHET_POLL_BURST_SECONDS=FAST["poll_burst_seconds"],
        RATCHET_POLL_IDLE_MAX_SECONDS=FAST["poll_idle_max_seconds"],
        RATCHET_NODE_HEARTBEAT_INTERVAL_SECONDS=FAST["heartbeat_interval_seconds"],
        RATCHET_COORDINATOR="none",
        GREETING="hello from app.config",
        **config,
    )
    return app


@pytest.fixture
def extension(sqlite_url: str) -> Iterator[tuple[Flask, RatchetFlask]]:
    app = flask_app(sqlite_url)
    jobs = ratchet_flask.Ratchet(app)  # the extension's Flask-style name: RatchetFlask itself
    assert isinstance(jobs, RatchetFlask)
    yield app, jobs
    jobs.ratchet.close()


# -- configuration ------------------------------------------------------------------------


def test_ratchet_keys_of_app_config_are_the_options_of_their_variables(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    monkeypatch.setenv("RATCHET_WORKER_CONCURRENCY", "3")
    monkeypatch.setenv("RATCHET_SHUTDOWN_TIMEOUT_SECONDS", "7")
    app = flask_app(sqlite_url, RATCHET_WORKER_CONCURRENCY="5", RATCHET_JOB_LOGS_ENABLED=None)
    assert options_from_config(app.config)["concurrency"] == 5
    jobs = RatchetFlask()
    jobs.init_app(app)
    try:
        ratchet = app.extensions[EXTENSION_KEY]
        assert jobs.ratchet is ratchet
        assert ratchet.store_url == sqlite_url
        assert ratchet.options.concurrency == 5  # app.config wins over the environment
        assert ratchet.options.shutdown_timeout_seconds == 7  # which wins over defaults
        assert ratchet.options.poll_burst_seconds == FAST["poll_burst_seconds"]
    finally:
        jobs.ratchet.close()


def test_a_bad_value_or_an_unknown_key_names_the_config_key(sqlite_url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"app.config\['RATCHET_WORKER_CONCURRENCY'\]"):
        RatchetFlask(flask_app(sqlite_url, RATCHET_WORKER_CONCURRENCY="lots"))
    with pytest.raises(ConfigurationError, match="'RATCHET_REDIS_URL'] is not a Ratchet option"):
        RatchetFlask(flask_app(sqlite_url, RATCHET_REDIS_URL="redis://localhost"))
    with pytest.raises(ConfigurationError, match="Did you mean 'RATCHET_WORKER_CONCURRENCY'"):
        RatchetFlask(flask_app(sqlite_url, RATCHET_WORKER_CONCURENCY=4))


def test_init_app_twice_and_a_shared_ratchet_with_config_keys_are_refused(
    extension: tuple[Flask, RatchetFlask], sqlite_url: str
) -> None:
    app, jobs = extension
    with pytest.raises(RuntimeError, match="already has a Ratchet extension"):
        jobs.init_app(app)
    with Ratchet(sqlite_url, **FAST) as given:
        with pytest.raises(ConfigurationError, match="RATCHET_STORE_URL"):
            RatchetFlask(flask_app(sqlite_url), ratchet=given)
        shared = RatchetFlask(Flask("first"), ratchet=given)
        assert shared.ratchet is given
        with pytest.raises(RuntimeError, match="already serves Flask app 'first'"):
            shared.init_app(Flask("second"))


def test_ratchet_before_init_app_says_what_to_do() -> None:
    with pytest.raises(RuntimeError, match="call init_app"):
        _ = RatchetFlask().ratchet


# -- jobs run inside the application context ----------------------------------------------


def greeting() -> str:
    return str(current_app.config["GREETING"])


async def async_greeting() -> str:
    return str(current_app.config["GREETING"])


@pytest.mark.parametrize("body", [greeting, async_greeting], ids=["sync", "async"])
def test_a_worker_runs_job_bodies_inside_the_app_context(
    extension: tuple[Flask, RatchetFlask], body: Callable[[], object]
) -> None:
    _app, jobs = extension
    jobs.ratchet.job(name="greet", max_retries=0)(body)
    job_id = jobs.ratchet.enqueue("greet")
    with jobs.ratchet.worker():
        wait_until(lambda: finished(jobs.ratchet, job_id), "the job")
    job = jobs.ratchet.get_job(job_id)
    assert job is not None
    assert (job.status, job.result) == (JobStatus.SUCCEEDED, "hello from app.config")


def test_negative_control_without_the_extension_there_is_no_app_context(
    sqlite_url: str,
) -> None:
    """The same job on a Ratchet that has no app-context middleware fails: what makes
    ``current_app`` work is the extension's middleware, not the worker."""
    flask_app(sqlite_url)  # a Flask app exists, but nothing ties the Ratchet to it
    with Ratchet(sqlite_url, **FAST) as ratchet:
        ratchet.job(name="greet", max_retries=0)(greeting)
        job_id = ratchet.enqueue("greet")
        with ratchet.worker():
            wait_until(lambda: finished(ratchet, job_id), "the job")
        job = ratchet.get_job(job_id)
        assert job is not None and job.status is JobStatus.FAILED
        assert "application context" in (job.last_error or "")


def test_flask_ratchet_worker_runs_the_pending_jobs(extension: tuple[Flask, RatchetFlask]) -> None:
    app, jobs = extension
    jobs.ratchet.job(name="greet", max_retries=0)(greeting)
    job_id = jobs.ratchet.enqueue("greet")
    result = app.test_cli_runner().invoke(args=["ratchet", "worker", "--burst"])
    assert result.exit_code == 0, result.output
    job = jobs.ratchet.get_job(job_id)
    assert job is not None and job.result == "hello from app.config"
    assert jobs.ratchet.store.list_nodes() == []  # it drained and left


# -- examples/flask -------------------------------------------------------------------------


def load_example(monkeypatch: pytest.MonkeyPatch, store_url: str) -> ModuleType:
    """examples/flask/app.py imported as a fresh module, as ``flask --app app`` would."""
    monkeypatch.setenv("RATCHET_STORE_URL", store_url)
    monkeypatch.setenv("RATCHET_COORDINATOR", "none")
    return import_file(EXAMPLE / "app.py", "flask_example_app")


def test_the_flask_example_runs_a_job_enqueued_through_its_route(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    """The route enqueues; ``flask --app app ratchet worker --burst`` (its README's
    production command) runs the job, which read ``current_app.config``."""
    example = load_example(monkeypatch, sqlite_url)
    try:
        client = example.app.test_client()
        answer = client.post("/signups", json={"address": "ada@example.com"})
        assert answer.status_code == 202
        job_id = answer.get_json()["job_id"]
        assert client.get(f"/jobs/{job_id}").get_json()["status"] == "PENDING"
        assert client.post("/signups", json={}).status_code == 400
        ran = example.app.test_cli_runner().invoke(args=["ratchet", "worker", "--burst"])
        assert ran.exit_code == 0, ran.output
        assert client.get(f"/jobs/{job_id}").get_json() == {
            "id": job_id,
            "status": "SUCCEEDED",
            "result": "Welcome mail from hello@example.com sent to ada@example.com",
        }
        assert client.get("/jobs/nope").status_code == 404
    finally:
        example.jobs.ratchet.close()


def test_the_flask_example_runs_with_the_command_in_its_readme(tmp_path: Path) -> None:
    """``uv run python app.py`` from the example's folder, as its README says (run here
    with this environment's python, in a copy of the folder so the SQLite file lands in
    tmp_path): a job enqueued over HTTP succeeds, and Ctrl-C drains the worker."""
    command = "uv run python app.py"
    assert f"```sh\n{command}\n```" in (EXAMPLE / "README.md").read_text()
    (tmp_path / "app.py").write_text((EXAMPLE / "app.py").read_text())
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
    server = subprocess.Popen(
        [sys.executable, "app.py"],
        cwd=tmp_path,
        env={**env, "RATCHET_COORDINATOR": "none", "PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as in a terminal: a shell running this suite in the background hands its
        # children SIGINT ignored, and Python then raises no KeyboardInterrupt.
        preexec_fn=_sigint_as_in_a_terminal,  # noqa: PLW1509 (it only resets a disposition)
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def serving() -> bool:
            assert server.poll() is None, "the example exited early"
            try:
                return httpx.get(f"{base}/jobs/none").status_code == 404
            except httpx.TransportError:
                return False

        wait_until(serving, "the development server")
        answer = httpx.post(f"{base}/signups", json={"address": "ada@example.com"})
        job_id = answer.json()["job_id"]
        wait_until(
            lambda: httpx.get(f"{base}/jobs/{job_id}").json()["status"] == "SUCCEEDED",
            "the job",
        )
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C
        output, _ = server.communicate(timeout=BOUND)
    with Ratchet(f"sqlite:///{tmp_path / 'ratchet.db'}", coordinator="none") as stored:
        job = stored.get_job(job_id)
        assert job is not None and job.result == (
            "Welcome mail from hello@example.com sent to ada@example.com"
        ), output
        assert stored.store.list_nodes() == [], output  # the worker drained and left


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)

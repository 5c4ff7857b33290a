"""Selection, secrets, and a wakeup across two real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ratchet import Ratchet
from ratchet_coordinator_redis import RedisClusterCoordinator
from ratchet_coordinator_redis._plugin import availability

WORKER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from ratchet import Ratchet

    app = Ratchet(sys.argv[1])

    @app.job(name="touch")
    def touch(path):
        Path(path).write_text("done")

    print("coordinator:", type(app.coordinator).__name__, flush=True)
    app.run_worker()
""")


def test_available_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RATCHET_REDIS_URL", raising=False)
    assert availability(None, None) == "RATCHET_REDIS_URL is not set"
    monkeypatch.setenv("RATCHET_REDIS_URL", "redis://127.0.0.1:6379/0")
    assert availability(None, None) is None


@pytest.mark.server
def test_selected_by_configuration(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    monkeypatch.setenv("RATCHET_REDIS_URL", redis_url)
    monkeypatch.delenv("RATCHET_COORDINATOR", raising=False)
    app = Ratchet("memory://")
    try:
        assert isinstance(app.coordinator, RedisClusterCoordinator)
        assert app.coordinator.ready
    finally:
        app.close()


def test_password_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    coordinator = RedisClusterCoordinator(
        "redis://user:s3cret@127.0.0.1:1/0", "node-a", ready_timeout=0.5
    )
    try:
        time.sleep(0.5)
    finally:
        coordinator.close()
    assert "s3cret" not in caplog.text
    assert "user:***@127.0.0.1" in caplog.text


@pytest.mark.server
def test_idle_worker_in_another_process_wakes_at_once(tmp_path: Path, redis_url: str) -> None:
    """The worker's poll ceiling is 60 s and it has gone idle; a job enqueued here starts
    within seconds only because the coordinator wakes it (a liveness bound, not a benchmark)."""
    store = f"sqlite:///{tmp_path / 'jobs.db'}"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    channel = f"ratchet:test:{os.getpid()}:{time.monotonic_ns()}"
    env = {
        **os.environ,
        "RATCHET_REDIS_URL": redis_url,
        "RATCHET_REDIS_CHANNEL": channel,
        "RATCHET_COORDINATOR": "redis",
        "RATCHET_POLL_IDLE_MAX_SECONDS": "60",
        "RATCHET_POLL_BURST_SECONDS": "0.5",
    }
    worker = subprocess.Popen(
        [sys.executable, str(script), store],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert worker.stdout is not None
        banner = ""
        while not banner.startswith("coordinator:"):  # skip unrelated warnings
            banner = worker.stdout.readline()
            assert banner, "the worker exited before starting"
        assert "RedisClusterCoordinator" in banner
        time.sleep(3)  # idle: the poller backs off towards its 60 s ceiling
        os.environ.update({k: env[k] for k in ("RATCHET_REDIS_URL", "RATCHET_REDIS_CHANNEL")})
        app = Ratchet(store, coordinator="redis")
        touch = app.job(name="touch")(lambda path: None)
        marker = tmp_path / "marker.txt"
        touch.enqueue(str(marker))
        deadline = time.monotonic() + 10
        while not marker.exists():
            assert time.monotonic() < deadline, "the idle worker was not woken"
            time.sleep(0.05)
        app.close()
    finally:
        worker.terminate()
        worker.wait(timeout=30)

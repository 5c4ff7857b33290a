"""Selection, secrets, and a wakeup across two real processes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ratchet import Ratchet
from ratchet_coordinator_redis import RedisClusterCoordinator
from ratchet_coordinator_redis._plugin import availability
from ratchet_tck.wakeup import assert_idle_worker_wakes


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
    """An idle worker (poll ceiling 60 s) in another process runs a job enqueued here
    within seconds, woken by the coordinator (a liveness bound; latency is benchmarked)."""
    channel = f"ratchet:test:{os.getpid()}:{time.monotonic_ns()}"
    assert_idle_worker_wakes(
        f"sqlite:///{tmp_path / 'jobs.db'}",
        "redis",
        "RedisClusterCoordinator",
        env={"RATCHET_REDIS_URL": redis_url, "RATCHET_REDIS_CHANNEL": channel},
    )


def test_loading_plugins_does_not_import_redis() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from ratchet.plugins import PluginRegistry; PluginRegistry.load(); "
        "print('redis' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

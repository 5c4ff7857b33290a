"""Activation with a PostgreSQL store, and a wakeup across two real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ratchet import Ratchet
from ratchet_coordinator_pg import PostgreSQLClusterCoordinator
from ratchet_coordinator_pg._plugin import availability

pytestmark = pytest.mark.server

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


def test_activates_by_itself_on_a_postgresql_store(
    monkeypatch: pytest.MonkeyPatch, postgresql_url: str
) -> None:
    monkeypatch.delenv("RATCHET_COORDINATOR", raising=False)
    monkeypatch.delenv("RATCHET_PG_COORDINATOR_URL", raising=False)
    monkeypatch.delenv("RATCHET_REDIS_URL", raising=False)
    app = Ratchet(postgresql_url)
    try:
        assert isinstance(app.coordinator, PostgreSQLClusterCoordinator)
        assert app.coordinator.ready
        assert "installed and applicable" in app.coordinator_reason
    finally:
        app.close()
    assert availability(None, Ratchet("memory://", coordinator="none").store) is not None


def test_rejects_a_channel_that_is_not_an_identifier(postgresql_url: str) -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        PostgreSQLClusterCoordinator(postgresql_url, "n", channel="bad channel; drop")


def test_idle_worker_in_another_process_wakes_at_once(tmp_path: Path, postgresql_url: str) -> None:
    """The worker's poll ceiling is 60 s and it has gone idle; a job enqueued from this
    process starts within seconds only because NOTIFY wakes it (a liveness bound)."""
    channel = f"ratchet_test_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    env = {
        **os.environ,
        "RATCHET_COORDINATOR": "pg",
        "RATCHET_PG_CHANNEL": channel,
        "RATCHET_POLL_IDLE_MAX_SECONDS": "60",
        "RATCHET_POLL_BURST_SECONDS": "0.5",
    }
    store_url = postgresql_url
    cleaner = Ratchet(store_url, coordinator="none")
    cleaner.store.reset_for_tests()  # type: ignore[attr-defined]
    cleaner.close()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    worker = subprocess.Popen(
        [sys.executable, str(script), store_url],
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
        assert "PostgreSQLClusterCoordinator" in banner
        time.sleep(3)  # idle: the poller backs off towards its 60 s ceiling
        os.environ["RATCHET_PG_CHANNEL"] = channel
        app = Ratchet(store_url, coordinator="pg")
        touch = app.job(name="touch")(lambda path: None)
        marker = tmp_path / "marker.txt"
        touch.enqueue(str(marker))
        deadline = time.monotonic() + 10
        while not marker.exists():
            assert time.monotonic() < deadline, "the idle worker was not woken"
            time.sleep(0.05)
        app.close()
    finally:
        os.environ.pop("RATCHET_PG_CHANNEL", None)
        worker.terminate()
        worker.wait(timeout=30)

"""Activation with a PostgreSQL store, and a wakeup across two real processes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ratchet import Ratchet, RatchetOptions
from ratchet_coordinator_pg import PostgreSQLClusterCoordinator
from ratchet_coordinator_pg import coordinator as coordinator_module
from ratchet_coordinator_pg._plugin import availability
from ratchet_tck.wakeup import assert_idle_worker_wakes

pytestmark = pytest.mark.server


def test_activates_by_itself_on_a_postgresql_store(
    monkeypatch: pytest.MonkeyPatch, postgresql_url: str
) -> None:
    monkeypatch.delenv("RATCHET_COORDINATOR", raising=False)
    monkeypatch.delenv("RATCHET_PG_COORDINATOR_URL", raising=False)
    monkeypatch.delenv("RATCHET_REDIS_URL", raising=False)
    app = Ratchet(postgresql_url)
    try:
        assert isinstance(app.coordinator, PostgreSQLClusterCoordinator)
        assert app.coordinator.wait_until_ready(10)  # connects in the background
        assert "installed and applicable" in app.coordinator_reason
    finally:
        app.close()
    assert (
        availability(RatchetOptions.from_env(), Ratchet("memory://", coordinator="none").store)
        is not None
    )


def test_rejects_a_channel_that_is_not_an_identifier(postgresql_url: str) -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        PostgreSQLClusterCoordinator(postgresql_url, "n", channel="bad channel; drop")


def test_idle_worker_in_another_process_wakes_at_once(tmp_path: Path, postgresql_url: str) -> None:
    """An idle worker (poll ceiling 60 s) in another process on a PostgreSQL store runs a
    job enqueued here within seconds. Unlike the kit's wakeup contract (a SQLite store,
    hinted through ``RATCHET_PG_COORDINATOR_URL``), the hint here rides in the enqueue's own
    transaction (``SupportsEnqueueHints``)."""
    channel = f"ratchet_test_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    cleaner = Ratchet(postgresql_url, coordinator="none")
    cleaner.store.reset_for_tests()  # type: ignore[attr-defined]
    cleaner.close()
    assert_idle_worker_wakes(
        postgresql_url, "pg", "PostgreSQLClusterCoordinator", env={"RATCHET_PG_CHANNEL": channel}
    )


@pytest.mark.server
def test_close_interrupts_the_listening_thread(
    monkeypatch: pytest.MonkeyPatch, postgresql_url: str
) -> None:
    """``close()`` wakes the listening thread out of its wait (a pipe of its own), so the
    thread has ended when ``close()`` returns. Before, it waited for a 0.5 s polling tick;
    with the wait stretched to a minute here, only the wake-up can end it within the
    join of ``close()``."""
    monkeypatch.setattr(coordinator_module, "LISTEN_WAKE_SECONDS", 60.0)
    coordinator = PostgreSQLClusterCoordinator(postgresql_url, "node-closing", ready_timeout=10)
    assert coordinator.ready
    coordinator.close()
    assert not coordinator._thread.is_alive()

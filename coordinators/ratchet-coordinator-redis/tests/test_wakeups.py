"""Selection and secrets. The wakeup across two real processes is a contract of the kit's
coordinator suite (``test_conformance.py``)."""

from __future__ import annotations

import time

import pytest

from ratchet import RatchetOptions
from ratchet_coordinator_redis import RedisClusterCoordinator
from ratchet_coordinator_redis import coordinator as coordinator_module
from ratchet_coordinator_redis._plugin import availability
from ratchet_tck.coordinator import package_checks as checks


def test_available_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "redis://127.0.0.1:6379/0"
    checks.assert_available_only_when_configured(
        availability, monkeypatch, "RATCHET_REDIS_URL", url
    )


def test_settings_come_from_the_nodes_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """The availability check and the factory read the options' snapshot
    (``RatchetOptions.environment``), never ``os.environ`` later on, so both see one
    configuration, read once. Look at RedisSettings.from_options."""
    monkeypatch.delenv("RATCHET_REDIS_URL", raising=False)
    environ = {"RATCHET_REDIS_URL": "redis://127.0.0.1:1/0", "RATCHET_REDIS_CHANNEL": "opts"}
    options = RatchetOptions.from_env(environ=environ)
    monkeypatch.setenv("RATCHET_REDIS_URL", "http://not-read")  # changed after: not seen
    assert availability(options, None) is None
    coordinator = RedisClusterCoordinator.from_environment(options, None, "node-a")
    try:
        assert coordinator.channel == "opts"
    finally:
        coordinator.close()


@pytest.mark.server
def test_selected_by_configuration(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    environment = {"RATCHET_REDIS_URL": redis_url}
    checks.assert_selected_by_configuration(monkeypatch, RedisClusterCoordinator, environment)


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


def test_loading_plugins_does_not_import_redis() -> None:
    checks.assert_loading_plugins_does_not_import("redis")


@pytest.mark.server
def test_close_interrupts_the_listening_thread(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """``close()`` publishes once on the node's own stop channel, which wakes the
    listening thread out of its wait, so the thread has ended when ``close()`` returns
    (with the wait stretched to a minute here, nothing else could end it in time)."""
    monkeypatch.setattr(coordinator_module, "LISTEN_WAKE_SECONDS", 60.0)
    coordinator = RedisClusterCoordinator(redis_url, "node-closing", ready_timeout=10)
    assert coordinator.ready
    coordinator.close()
    assert not coordinator._thread.is_alive()

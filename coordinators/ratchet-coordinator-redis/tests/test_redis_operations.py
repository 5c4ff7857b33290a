"""Operating mistakes (issue #15, point 14): the coordinator selected without its URL, and a
server that is down while ``Ratchet()`` starts."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ratchet import Ratchet, RatchetOptions
from ratchet.cli import main
from ratchet.errors import ConfigurationError
from ratchet_coordinator_redis import RedisClusterCoordinator
from ratchet_tck import RecordingListener, TcpRelay


@pytest.fixture
def channel() -> str:
    return f"ratchet:test:{os.getpid()}:{time.monotonic_ns()}"


def test_selected_without_its_url_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a bare KeyError from the factory, while ``ratchet plugins`` called redis
    active. Look at PluginRegistry.choose_coordinator and RedisClusterCoordinator.from_environment."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "redis")
    monkeypatch.delenv("RATCHET_REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="RATCHET_REDIS_URL is not set"):
        Ratchet("memory://")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    Ratchet(url, coordinator="none").close()
    assert main(["plugins", "--store", url]) == 1
    out = capsys.readouterr().out
    assert "Ratchet() refuses to start" in out and "RATCHET_REDIS_URL is not set" in out
    with pytest.raises(ConfigurationError, match="RATCHET_REDIS_URL is not set"):
        RedisClusterCoordinator.from_environment(RatchetOptions.from_env(), None, "node-a")


def test_a_url_of_another_scheme_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_COORDINATOR", "redis")
    monkeypatch.setenv("RATCHET_REDIS_URL", "http://user:s3cret@cache:6379")
    with pytest.raises(ConfigurationError, match="scheme 'http'") as raised:
        Ratchet("memory://")
    assert "s3cret" not in str(raised.value)


@pytest.fixture
def late_server(redis_url: str) -> Iterator[TcpRelay]:
    parts = urlsplit(redis_url)
    server = TcpRelay((parts.hostname or "127.0.0.1", parts.port or 6379), listening=False)
    yield server
    server.close()


@pytest.mark.server
def test_ratchet_does_not_wait_for_a_server_that_is_down(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, late_server: TcpRelay, channel: str
) -> None:
    """``Ratchet()`` returns while nothing listens on the port (it used to wait 10 s), the
    coordinator says it is not subscribed, and once the server is up it subscribes in the
    background and delivers hints. Look at the factory passing ``ready_timeout=0``."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "redis")
    monkeypatch.setenv("RATCHET_REDIS_URL", f"redis://127.0.0.1:{late_server.port}/0")
    monkeypatch.setenv("RATCHET_REDIS_CHANNEL", channel)
    app = Ratchet("memory://")
    try:
        coordinator = app.coordinator
        assert isinstance(coordinator, RedisClusterCoordinator)
        assert not coordinator.ready
        listener = RecordingListener()
        coordinator.register_wakeup_listener(listener)
        late_server.restore()
        assert coordinator.wait_until_ready(30), "never subscribed once the server was up"
        sender = RedisClusterCoordinator(redis_url, "sender", channel=channel)
        try:
            sender.notify_new_work(3, "sender", None)
            deadline = time.monotonic() + 10
            while not any(hint.source_node == "sender" for hint in listener.hints):
                assert time.monotonic() < deadline, "the hint never arrived"
                listener.wait_for(len(listener.hints) + 1, 0.1)
        finally:
            sender.close()
    finally:
        app.close()

"""Operating mistakes (issue #15, point 14): the coordinator selected with a store that is not
PostgreSQL, and a server that is down while ``Ratchet()`` starts."""

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
from ratchet_coordinator_pg import PostgreSQLClusterCoordinator
from ratchet_tck import RecordingListener, TcpRelay


def test_selected_with_a_store_that_is_not_postgresql_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an AttributeError (no ``conninfo``) from the factory, while ``ratchet
    plugins`` called pg active. Look at PluginRegistry.choose_coordinator and
    PostgreSQLClusterCoordinator.for_store."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "pg")
    monkeypatch.delenv("RATCHET_PG_COORDINATOR_URL", raising=False)
    with pytest.raises(ConfigurationError, match="not PostgreSQL.*RATCHET_PG_COORDINATOR_URL"):
        Ratchet("memory://")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    store = Ratchet(url, coordinator="none").store
    assert main(["plugins", "--store", url]) == 1
    out = capsys.readouterr().out
    assert "Ratchet() refuses to start" in out and "the store is not PostgreSQL" in out
    with pytest.raises(ConfigurationError, match=r"sqlite:///.*is not one"):
        PostgreSQLClusterCoordinator.for_store(RatchetOptions.from_env(), store, "node-a")
    store.close()


def test_a_url_of_another_scheme_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_COORDINATOR", "pg")
    monkeypatch.setenv("RATCHET_PG_COORDINATOR_URL", "mysql://root:s3cret@db/app")
    with pytest.raises(ConfigurationError, match="scheme 'mysql'") as raised:
        Ratchet("memory://")
    assert "s3cret" not in str(raised.value)


@pytest.fixture
def late_server(postgresql_url: str) -> Iterator[TcpRelay]:
    parts = urlsplit(postgresql_url)
    server = TcpRelay((parts.hostname or "127.0.0.1", parts.port or 5432), listening=False)
    yield server
    server.close()


@pytest.mark.server
def test_ratchet_does_not_wait_for_a_server_that_is_down(
    monkeypatch: pytest.MonkeyPatch, postgresql_url: str, late_server: TcpRelay
) -> None:
    """``Ratchet()`` returns while nothing listens on the port (it used to wait 10 s), the
    coordinator says it is not listening, and once the server is up it LISTENs in the
    background and delivers hints. Look at the factory passing ``ready_timeout=0``."""
    parts = urlsplit(postgresql_url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + f"127.0.0.1:{late_server.port}"
    late_url = parts._replace(netloc=netloc).geturl()
    channel = f"ratchet_test_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    monkeypatch.setenv("RATCHET_COORDINATOR", "pg")
    monkeypatch.setenv("RATCHET_PG_COORDINATOR_URL", late_url)
    monkeypatch.setenv("RATCHET_PG_CHANNEL", channel)
    app = Ratchet("memory://")
    try:
        coordinator = app.coordinator
        assert isinstance(coordinator, PostgreSQLClusterCoordinator)
        assert not coordinator.ready
        listener = RecordingListener()
        coordinator.register_wakeup_listener(listener)
        late_server.restore()
        assert coordinator.wait_until_ready(30), "never listening once the server was up"
        sender = PostgreSQLClusterCoordinator(postgresql_url, "sender", channel=channel)
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

"""Configuration, selection and failure behaviour that need no cluster."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from ratchet import RatchetOptions
from ratchet.errors import ConfigurationError
from ratchet.plugins import PluginRegistry
from ratchet_coordinator_hazelcast import HazelcastClusterCoordinator, HazelcastSettings
from ratchet_coordinator_hazelcast._config import parse_members
from ratchet_coordinator_hazelcast._plugin import availability


def _refused_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_available_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RATCHET_HAZELCAST_MEMBERS", raising=False)
    assert availability(RatchetOptions.from_env(), None) == "RATCHET_HAZELCAST_MEMBERS is not set"
    monkeypatch.setenv("RATCHET_HAZELCAST_MEMBERS", " ")
    assert availability(RatchetOptions.from_env(), None) == "RATCHET_HAZELCAST_MEMBERS is not set"
    monkeypatch.setenv("RATCHET_HAZELCAST_MEMBERS", "127.0.0.1:5701")
    assert availability(RatchetOptions.from_env(), None) is None


def test_registered_under_the_ratchet_entry_point_with_rank_40() -> None:
    plugins = {c.name: c for c in PluginRegistry.load().coordinator_plugins()}
    plugin = plugins["hazelcast"]
    assert plugin.rank == 40
    assert plugin.package == "ratchet-coordinator-hazelcast"
    assert plugin.tck_harness == "ratchet_coordinator_hazelcast.harness:HazelcastHarness"


def test_loading_the_plugin_does_not_import_the_client() -> None:
    """The entry point is import-light: the Hazelcast client loads only when used."""
    code = (
        "import json, sys\n"
        "from ratchet.plugins import PluginRegistry\n"
        "names = [c.name for c in PluginRegistry.load().coordinator_plugins()]\n"
        "print(json.dumps({'hz': 'hazelcast' in names, 'client': 'hazelcast' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"hz": True, "client": False}


def test_members_are_comma_separated() -> None:
    assert parse_members(" 10.0.0.1:5701, hz-2 ,[::1]:5702,") == (
        "10.0.0.1:5701",
        "hz-2",
        "[::1]:5702",
    )


@pytest.mark.parametrize("raw", [",", "hz://10.0.0.1:5701", "10.0.0.1:port", ":5701", "a b:1"])
def test_invalid_members_name_the_variable(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="RATCHET_HAZELCAST_MEMBERS"):
        parse_members(raw)


def test_settings_from_the_environment() -> None:
    settings = HazelcastSettings.from_env({"RATCHET_HAZELCAST_MEMBERS": "127.0.0.1:5701"})
    assert settings == HazelcastSettings(
        members=("127.0.0.1:5701",),
        cluster_name="dev",
        topic="ratchet-wakeup",
        connect_timeout_seconds=10.0,
        reconnect_max_seconds=30.0,
    )
    custom = HazelcastSettings.from_env(
        {
            "RATCHET_HAZELCAST_MEMBERS": "a:5701,b:5701",
            "RATCHET_HAZELCAST_CLUSTER_NAME": "prod",
            "RATCHET_HAZELCAST_TOPIC": "orders-wakeup",
            "RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS": "3",
            "RATCHET_HAZELCAST_RECONNECT_MAX_SECONDS": "5",
        }
    )
    assert custom == HazelcastSettings(
        members=("a:5701", "b:5701"),
        cluster_name="prod",
        topic="orders-wakeup",
        connect_timeout_seconds=3.0,
        reconnect_max_seconds=5.0,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS", "0"),
        ("RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS", "soon"),
        ("RATCHET_HAZELCAST_RECONNECT_MAX_SECONDS", "inf"),
    ],
)
def test_invalid_setting_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        HazelcastSettings.from_env({"RATCHET_HAZELCAST_MEMBERS": "a:5701", name: value})


def test_factory_without_members_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RATCHET_HAZELCAST_MEMBERS", raising=False)
    with pytest.raises(ConfigurationError, match="RATCHET_HAZELCAST_MEMBERS is not set"):
        HazelcastClusterCoordinator.from_environment(RatchetOptions.from_env(), None, "node-a")


def test_unreachable_cluster_never_blocks_or_raises(caplog: pytest.LogCaptureFixture) -> None:
    """Construction gives up waiting after the connect timeout (with a warning), notify is a
    counted no-op while disconnected, and close is prompt."""
    started = time.monotonic()
    coordinator = HazelcastClusterCoordinator(
        "node-a", members=[f"127.0.0.1:{_refused_port()}"], connect_timeout_seconds=0.5
    )
    try:
        assert not coordinator.ready
        coordinator.notify_new_work(2, "node-a", None)
        metrics = coordinator.metrics()
        assert (metrics.sent, metrics.transport_failures) == (0, 1)
    finally:
        coordinator.close()
    coordinator.close()
    assert time.monotonic() - started < 15
    assert "is not subscribed" in caplog.text

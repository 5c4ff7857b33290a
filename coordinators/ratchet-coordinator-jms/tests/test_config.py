"""Configuration, selection and failure behaviour that need no broker."""

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
from ratchet_coordinator_jms import JmsClusterCoordinator
from ratchet_coordinator_jms._config import (
    BrokerAddress,
    JmsSettings,
    parse_url,
    self_filter_selector,
)
from ratchet_coordinator_jms._plugin import availability


def _refused_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_available_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RATCHET_JMS_URL", raising=False)
    assert availability(RatchetOptions.from_env(), None) == "RATCHET_JMS_URL is not set"
    monkeypatch.setenv("RATCHET_JMS_URL", "   ")
    assert availability(RatchetOptions.from_env(), None) == "RATCHET_JMS_URL is not set"
    monkeypatch.setenv("RATCHET_JMS_URL", "stomp://127.0.0.1:61613")
    assert availability(RatchetOptions.from_env(), None) is None


def test_registered_under_the_ratchet_entry_point_with_rank_30() -> None:
    plugins = {c.name: c for c in PluginRegistry.load().coordinator_plugins()}
    jms = plugins["jms"]
    assert jms.rank == 30
    assert jms.package == "ratchet-coordinator-jms"
    assert jms.tck_harness == "ratchet_coordinator_jms.harness:JmsHarness"


def test_loading_the_plugin_does_not_import_stomp() -> None:
    """The entry point is import-light: stomp.py loads only when the coordinator is made."""
    code = (
        "import json, sys\n"
        "from ratchet.plugins import PluginRegistry\n"
        "names = [c.name for c in PluginRegistry.load().coordinator_plugins()]\n"
        "print(json.dumps({'jms': 'jms' in names, 'stomp': 'stomp' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"jms": True, "stomp": False}


def test_url_with_credentials() -> None:
    assert parse_url("stomp://ratchet:p%40ss@broker.internal:61614") == BrokerAddress(
        host="broker.internal", port=61614, login="ratchet", passcode="p@ss"
    )
    assert parse_url("stomp://127.0.0.1") == BrokerAddress(host="127.0.0.1", port=61613)
    assert "p@ss" not in repr(parse_url("stomp://ratchet:p%40ss@h"))


@pytest.mark.parametrize(
    "url",
    [
        "tcp://user:s3cret@broker:61616",
        "stomp://user:s3cret@:61613",
        "stomp://user:s3cret@broker:notaport",
        "stomp://user:s3cret@broker:61613/ratchet.wakeup",
        "broker:61613",
    ],
)
def test_invalid_url_names_the_variable_and_hides_the_password(url: str) -> None:
    with pytest.raises(ConfigurationError, match="RATCHET_JMS_URL") as info:
        parse_url(url)
    assert "s3cret" not in str(info.value)


def test_settings_from_the_environment() -> None:
    settings = JmsSettings.from_env({"RATCHET_JMS_URL": "stomp://h:1"})
    assert settings.destination == "/topic/ratchet.wakeup"
    assert settings.selector is True
    assert settings.heartbeat_seconds == 10.0
    assert settings.connect_timeout_seconds == 10.0
    assert settings.reconnect_max_seconds == 30.0
    assert "stomp://h:1" not in repr(settings)
    custom = JmsSettings.from_env(
        {
            "RATCHET_JMS_URL": "stomp://h:1",
            "RATCHET_JMS_DESTINATION": "/topic/orders.wakeup",
            "RATCHET_JMS_SELECTOR": "false",
            "RATCHET_JMS_HEARTBEAT_SECONDS": "0",
            "RATCHET_JMS_CONNECT_TIMEOUT_SECONDS": "2.5",
            "RATCHET_JMS_RECONNECT_MAX_SECONDS": "5",
        }
    )
    assert (custom.destination, custom.selector, custom.heartbeat_seconds) == (
        "/topic/orders.wakeup",
        False,
        0.0,
    )
    assert (custom.connect_timeout_seconds, custom.reconnect_max_seconds) == (2.5, 5.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RATCHET_JMS_SELECTOR", "maybe"),
        ("RATCHET_JMS_HEARTBEAT_SECONDS", "-1"),
        ("RATCHET_JMS_HEARTBEAT_SECONDS", "ten"),
        ("RATCHET_JMS_CONNECT_TIMEOUT_SECONDS", "0"),
        ("RATCHET_JMS_RECONNECT_MAX_SECONDS", "nan"),
    ],
)
def test_invalid_setting_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        JmsSettings.from_env({"RATCHET_JMS_URL": "stomp://h:1", name: value})


def test_factory_without_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RATCHET_JMS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="RATCHET_JMS_URL is not set"):
        JmsClusterCoordinator.from_environment(RatchetOptions.from_env(), None, "node-a")


def test_selector_quotes_the_node_id() -> None:
    assert self_filter_selector("node-a") == "ratchet_node IS NULL OR ratchet_node <> 'node-a'"
    assert self_filter_selector("o'brien") == "ratchet_node IS NULL OR ratchet_node <> 'o''brien'"


def test_unreachable_broker_never_raises_and_never_logs_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Construction gives up waiting after the connect timeout (with a warning), notify is a
    counted no-op while disconnected, and close is prompt. The password appears nowhere."""
    caplog.set_level("DEBUG")
    port = _refused_port()
    started = time.monotonic()
    coordinator = JmsClusterCoordinator(
        f"stomp://user:s3cret@127.0.0.1:{port}", "node-a", connect_timeout_seconds=0.5
    )
    try:
        assert not coordinator.ready
        coordinator.notify_new_work(2, "node-a", None)
        coordinator.notify_new_work(2, "node-a", None)
        metrics = coordinator.metrics()
        assert (metrics.sent, metrics.transport_failures) == (0, 2)
    finally:
        coordinator.close()
    coordinator.close()
    assert time.monotonic() - started < 10
    assert "s3cret" not in caplog.text
    assert f"user:***@127.0.0.1:{port}" in caplog.text
    assert "s3cret" not in repr(coordinator)

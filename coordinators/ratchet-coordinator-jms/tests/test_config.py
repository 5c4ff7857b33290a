"""Configuration, selection and failure behaviour that need no broker."""

from __future__ import annotations

import pytest

from ratchet.errors import ConfigurationError
from ratchet_coordinator_jms import JmsClusterCoordinator
from ratchet_coordinator_jms._config import (
    BrokerAddress,
    JmsSettings,
    parse_url,
    self_filter_selector,
)
from ratchet_coordinator_jms._plugin import availability
from ratchet_tck.coordinator import package_checks as checks
from ratchet_tck.servers import free_port


def test_available_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    checks.assert_available_only_when_configured(
        availability, monkeypatch, "RATCHET_JMS_URL", "stomp://127.0.0.1:61613", blank="   "
    )


def test_registered_under_the_ratchet_entry_point_with_rank_30() -> None:
    checks.assert_coordinator_plugin(
        "jms",
        rank=30,
        package="ratchet-coordinator-jms",
        tck_harness="ratchet_coordinator_jms.harness:JmsHarness",
    )


def test_loading_the_plugin_does_not_import_stomp() -> None:
    """The entry point is import-light: stomp.py loads only when the coordinator is made."""
    checks.assert_loading_plugins_does_not_import("stomp", registered="jms")


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
    checks.refused_settings(
        {
            "RATCHET_JMS_SELECTOR": ["maybe"],
            "RATCHET_JMS_HEARTBEAT_SECONDS": ["-1", "ten"],
            "RATCHET_JMS_CONNECT_TIMEOUT_SECONDS": ["0"],
            "RATCHET_JMS_RECONNECT_MAX_SECONDS": ["nan"],
        }
    ),
)
def test_invalid_setting_names_its_variable(name: str, value: str) -> None:
    """Each value is refused with an error naming its variable."""
    with pytest.raises(ConfigurationError, match=name):
        JmsSettings.from_env({"RATCHET_JMS_URL": "stomp://h:1", name: value})


def test_factory_without_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    checks.assert_factory_names_its_missing_setting(
        JmsClusterCoordinator.from_environment, monkeypatch, "RATCHET_JMS_URL"
    )


def test_selector_quotes_the_node_id() -> None:
    assert self_filter_selector("node-a") == "ratchet_node IS NULL OR ratchet_node <> 'node-a'"
    assert self_filter_selector("o'brien") == "ratchet_node IS NULL OR ratchet_node <> 'o''brien'"


def test_unreachable_broker_never_raises_and_never_logs_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Construction gives up waiting after the connect timeout (with a warning), notify is a
    counted no-op while disconnected, and close is prompt. The password appears nowhere."""
    caplog.set_level("DEBUG")
    port = free_port()
    url = f"stomp://user:s3cret@127.0.0.1:{port}"
    coordinator = checks.assert_unreachable_server_never_blocks(
        lambda: JmsClusterCoordinator(url, "node-a", connect_timeout_seconds=0.5),
        notifies=2,
        within=10,
    )
    assert "s3cret" not in caplog.text
    assert f"user:***@127.0.0.1:{port}" in caplog.text
    assert "s3cret" not in repr(coordinator)

"""Configuration, selection and failure behaviour that need no cluster."""

from __future__ import annotations

import pytest

from ratchet.errors import ConfigurationError
from ratchet_coordinator_hazelcast import HazelcastClusterCoordinator, HazelcastSettings
from ratchet_coordinator_hazelcast._config import parse_members
from ratchet_coordinator_hazelcast._plugin import availability
from ratchet_tck.coordinator import package_checks as checks
from ratchet_tck.servers import free_port


def test_available_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    variable = "RATCHET_HAZELCAST_MEMBERS"
    checks.assert_available_only_when_configured(
        availability, monkeypatch, variable, "127.0.0.1:5701", blank=" "
    )


def test_registered_under_the_ratchet_entry_point_with_rank_40() -> None:
    harness = "ratchet_coordinator_hazelcast.harness:HazelcastHarness"
    checks.assert_coordinator_plugin(
        "hazelcast", rank=40, package="ratchet-coordinator-hazelcast", tck_harness=harness
    )


def test_loading_the_plugin_does_not_import_the_client() -> None:
    """The entry point is import-light: the Hazelcast client loads only when used."""
    checks.assert_loading_plugins_does_not_import("hazelcast", registered="hazelcast")


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


# Settings refused, by variable: each value must be refused naming its variable.
REFUSED = {
    "RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS": ["0", "soon"],
    "RATCHET_HAZELCAST_RECONNECT_MAX_SECONDS": ["inf"],
}


@pytest.mark.parametrize(("name", "value"), checks.refused_settings(REFUSED))
def test_invalid_setting_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        HazelcastSettings.from_env({"RATCHET_HAZELCAST_MEMBERS": "a:5701", name: value})


def test_factory_without_members_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    factory = HazelcastClusterCoordinator.from_environment
    checks.assert_factory_names_its_missing_setting(
        factory, monkeypatch, "RATCHET_HAZELCAST_MEMBERS"
    )


def test_unreachable_cluster_never_blocks_or_raises(caplog: pytest.LogCaptureFixture) -> None:
    """Construction gives up waiting after the connect timeout (with a warning), notify is a
    counted no-op while disconnected, and close is prompt."""
    members = [f"127.0.0.1:{free_port()}"]
    checks.assert_unreachable_server_never_blocks(
        lambda: HazelcastClusterCoordinator("node-a", members=members, connect_timeout_seconds=0.5),
        notifies=1,
        within=15,
    )
    assert "is not subscribed" in caplog.text

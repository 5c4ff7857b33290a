"""Entry point of the JMS coordinator. Import-light: stomp.py loads only when it is chosen."""

from __future__ import annotations

from typing import Any

from ratchet import RatchetOptions
from ratchet.plugins import CoordinatorPlugin, hookimpl
from ratchet_coordinator_jms._config import URL_VARIABLE, JmsSettings

RANK = 30


def availability(options: RatchetOptions, _store: Any) -> str | None:
    """Installed and configured means available: ``RATCHET_JMS_URL`` is set in the node's
    options. Settings that are set but invalid raise ConfigurationError naming the
    variable."""
    if not options.environment.get(URL_VARIABLE, "").strip():
        return f"{URL_VARIABLE} is not set"
    JmsSettings.from_options(options)  # standard library only: checks every RATCHET_JMS_*
    return None


@hookimpl
def ratchet_cluster_coordinators() -> list[CoordinatorPlugin]:
    return [
        CoordinatorPlugin(
            name="jms",
            factory="ratchet_coordinator_jms.coordinator:JmsClusterCoordinator.from_environment",
            availability="ratchet_coordinator_jms._plugin:availability",
            package="ratchet-coordinator-jms",
            rank=RANK,
            description="JMS topic over STOMP (ActiveMQ Classic tested), broker-side self filter",
            tck_harness="ratchet_coordinator_jms.harness:JmsHarness",
        )
    ]

"""Entry point of the JMS coordinator. Import-light: stomp.py loads only when it is chosen."""

from __future__ import annotations

import os
from typing import Any

from ratchet.plugins import CoordinatorPlugin, hookimpl
from ratchet_coordinator_jms._config import JmsSettings

RANK = 30


def availability(_options: Any, _store: Any) -> str | None:
    """Installed and configured means available: ``RATCHET_JMS_URL`` is set. Settings that
    are set but invalid raise ConfigurationError naming the variable."""
    if not os.environ.get("RATCHET_JMS_URL", "").strip():
        return "RATCHET_JMS_URL is not set"
    JmsSettings.from_env()  # standard library only: checks every RATCHET_JMS_* variable
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

"""Entry point of the Hazelcast coordinator. Import-light: the Hazelcast client loads only when
the coordinator is chosen."""

from __future__ import annotations

import os
from typing import Any

from ratchet.plugins import CoordinatorPlugin, hookimpl
from ratchet_coordinator_hazelcast._config import HazelcastSettings

RANK = 40


def availability(_options: Any, _store: Any) -> str | None:
    """Installed and configured means available: ``RATCHET_HAZELCAST_MEMBERS`` is set.
    Settings that are set but invalid raise ConfigurationError naming the variable."""
    if not os.environ.get("RATCHET_HAZELCAST_MEMBERS", "").strip():
        return "RATCHET_HAZELCAST_MEMBERS is not set"
    HazelcastSettings.from_env()  # standard library only: checks every RATCHET_HAZELCAST_*
    return None


@hookimpl
def ratchet_cluster_coordinators() -> list[CoordinatorPlugin]:
    return [
        CoordinatorPlugin(
            name="hazelcast",
            factory=(
                "ratchet_coordinator_hazelcast.coordinator:"
                "HazelcastClusterCoordinator.from_environment"
            ),
            availability="ratchet_coordinator_hazelcast._plugin:availability",
            package="ratchet-coordinator-hazelcast",
            rank=RANK,
            description="Hazelcast ITopic (hazelcast-python-client 5.x)",
            tck_harness="ratchet_coordinator_hazelcast.harness:HazelcastHarness",
        )
    ]

"""Entry point of the Hazelcast coordinator. Import-light: the Hazelcast client loads only when
the coordinator is chosen."""

from __future__ import annotations

from typing import Any

from ratchet import RatchetOptions
from ratchet.plugins import CoordinatorPlugin, hookimpl
from ratchet_coordinator_hazelcast._config import MEMBERS_VARIABLE, HazelcastSettings

RANK = 40


def availability(options: RatchetOptions, _store: Any) -> str | None:
    """Installed and configured means available: ``RATCHET_HAZELCAST_MEMBERS`` is set in
    the node's options. Settings that are set but invalid raise ConfigurationError naming
    the variable."""
    if not options.environment.get(MEMBERS_VARIABLE, "").strip():
        return f"{MEMBERS_VARIABLE} is not set"
    HazelcastSettings.from_options(options)  # standard library only: checks every variable
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

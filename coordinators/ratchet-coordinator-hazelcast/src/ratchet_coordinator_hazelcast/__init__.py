"""Ratchet wakeups on a Hazelcast ``ITopic``.

Importing the package is cheap; the Hazelcast client loads on first use of
:class:`HazelcastClusterCoordinator` (the plugin entry point imports only ``_plugin``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["HazelcastClusterCoordinator", "HazelcastSettings"]

if TYPE_CHECKING:
    from ratchet_coordinator_hazelcast._config import HazelcastSettings
    from ratchet_coordinator_hazelcast.coordinator import HazelcastClusterCoordinator


def __getattr__(name: str) -> Any:
    if name == "HazelcastClusterCoordinator":
        from ratchet_coordinator_hazelcast.coordinator import HazelcastClusterCoordinator

        return HazelcastClusterCoordinator
    if name == "HazelcastSettings":
        from ratchet_coordinator_hazelcast._config import HazelcastSettings

        return HazelcastSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Ratchet wakeups on a JMS topic over STOMP.

Importing the package is cheap; stomp.py loads on first use of
:class:`JmsClusterCoordinator` (the plugin entry point imports only ``_plugin``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["JmsClusterCoordinator", "JmsSettings"]

if TYPE_CHECKING:
    from ratchet_coordinator_jms._config import JmsSettings
    from ratchet_coordinator_jms.coordinator import JmsClusterCoordinator


def __getattr__(name: str) -> Any:
    if name == "JmsClusterCoordinator":
        from ratchet_coordinator_jms.coordinator import JmsClusterCoordinator

        return JmsClusterCoordinator
    if name == "JmsSettings":
        from ratchet_coordinator_jms._config import JmsSettings

        return JmsSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

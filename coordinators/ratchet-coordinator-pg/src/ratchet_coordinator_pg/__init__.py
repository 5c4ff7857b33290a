"""Ratchet wakeups over PostgreSQL LISTEN/NOTIFY.

The package is imported whenever plugins load (its ``_plugin`` entry point lives in it), so
the coordinator and its driver load only on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet_coordinator_pg.coordinator import PostgreSQLClusterCoordinator

__all__ = ["PostgreSQLClusterCoordinator"]


def __getattr__(name: str) -> Any:
    if name == "PostgreSQLClusterCoordinator":
        from ratchet_coordinator_pg.coordinator import PostgreSQLClusterCoordinator

        return PostgreSQLClusterCoordinator
    raise AttributeError(name)

"""Entry point of the LISTEN/NOTIFY coordinator. Import-light: psycopg loads only when chosen."""

from __future__ import annotations

import os
from typing import Any

from ratchet.plugins import CoordinatorPlugin, hookimpl


def availability(_options: Any, store: Any) -> str | None:
    """Available when the store is PostgreSQL, or ``RATCHET_PG_COORDINATOR_URL`` is set."""
    if os.environ.get("RATCHET_PG_COORDINATOR_URL", "").strip():
        return None
    if getattr(store, "name", None) == "postgresql" and hasattr(store, "conninfo"):
        return None
    return "the store is not PostgreSQL and RATCHET_PG_COORDINATOR_URL is not set"


@hookimpl
def ratchet_cluster_coordinators() -> list[CoordinatorPlugin]:
    return [
        CoordinatorPlugin(
            name="pg",
            factory="ratchet_coordinator_pg.coordinator:PostgreSQLClusterCoordinator.for_store",
            availability="ratchet_coordinator_pg._plugin:availability",
            package="ratchet-coordinator-pg",
            rank=10,
            description="PostgreSQL LISTEN/NOTIFY",
            tck_harness="ratchet_coordinator_pg.harness:PostgreSQLHarness",
        )
    ]

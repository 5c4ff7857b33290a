"""Entry point of the LISTEN/NOTIFY coordinator. Import-light: psycopg loads only when chosen."""

from __future__ import annotations

from typing import Any

from ratchet import RatchetOptions
from ratchet.plugins import CoordinatorPlugin, hookimpl
from ratchet_coordinator_pg._config import URL_VARIABLE, PostgreSQLSettings


def availability(options: RatchetOptions, store: Any) -> str | None:
    """Available when the store is PostgreSQL, or ``RATCHET_PG_COORDINATOR_URL`` is set in
    the node's options. A URL of another scheme raises ConfigurationError naming the
    variable."""
    if PostgreSQLSettings.from_options(options).url is not None:
        return None
    if uses_store_database(store):
        return None
    return f"the store is not PostgreSQL and {URL_VARIABLE} is not set"


def uses_store_database(store: Any) -> bool:
    """Whether the coordinator can LISTEN on the store's own PostgreSQL database."""
    return getattr(store, "name", None) == "postgresql" and hasattr(store, "conninfo")


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

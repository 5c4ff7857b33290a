"""Entry point of the LISTEN/NOTIFY coordinator. Import-light: psycopg loads only when chosen."""

from __future__ import annotations

import os
from typing import Any

from ratchet.errors import ConfigurationError
from ratchet.plugins import CoordinatorPlugin, hookimpl

URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def availability(_options: Any, store: Any) -> str | None:
    """Available when the store is PostgreSQL, or ``RATCHET_PG_COORDINATOR_URL`` is set.
    A URL of another scheme raises ConfigurationError naming the variable."""
    url = os.environ.get("RATCHET_PG_COORDINATOR_URL", "").strip()
    if url:
        scheme = url.partition("://")[0].lower() if "://" in url else ""
        if scheme not in URL_SCHEMES:
            raise ConfigurationError(
                f"RATCHET_PG_COORDINATOR_URL has scheme {scheme!r}; it must be a "
                "postgresql:// URL, for example postgresql://user@host/db."
            )
        return None
    if uses_store_database(store):
        return None
    return "the store is not PostgreSQL and RATCHET_PG_COORDINATOR_URL is not set"


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

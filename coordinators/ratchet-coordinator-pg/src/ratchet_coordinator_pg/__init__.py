"""Ratchet wakeups over PostgreSQL LISTEN/NOTIFY."""

from ratchet_coordinator_pg.coordinator import PostgreSQLClusterCoordinator

__all__ = ["PostgreSQLClusterCoordinator"]

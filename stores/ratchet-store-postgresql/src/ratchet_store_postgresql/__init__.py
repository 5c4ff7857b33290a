"""Ratchet job store on PostgreSQL 14+ (psycopg 3).

Select it with a ``postgresql://user:password@host:5432/dbname`` store URL (or
``postgresql+psycopg://``); it is registered through the ``ratchet`` entry point, so
installing the package is enough. :meth:`PostgreSQLJobStore.enqueue_in` adds a job inside
the application's own transaction.

The names below load on first use: Ratchet imports this package's ``_plugin`` module for
every installed plugin, and that must not import psycopg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ratchet.spi import lazy_exports

if TYPE_CHECKING:
    from ratchet_store_postgresql._transactional import SupportsTransactionalEnqueue
    from ratchet_store_postgresql.schema import schema_sql
    from ratchet_store_postgresql.store import PostgreSQLJobStore

__all__ = ["PostgreSQLJobStore", "SupportsTransactionalEnqueue", "schema_sql"]

_HOMES = {
    "PostgreSQLJobStore": "ratchet_store_postgresql.store",
    "SupportsTransactionalEnqueue": "ratchet_store_postgresql._transactional",
    "schema_sql": "ratchet_store_postgresql.schema",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

"""Ratchet job store on PostgreSQL 14+ (psycopg 3).

Select it with a ``postgresql://user:password@host:5432/dbname`` store URL (or
``postgresql+psycopg://``); it is registered through the ``ratchet`` entry point, so
installing the package is enough. :meth:`PostgreSQLJobStore.enqueue_in` adds a job inside
the application's own transaction.

The names below load on first use: Ratchet imports this package's ``_plugin`` module for
every installed plugin, and that must not import psycopg.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

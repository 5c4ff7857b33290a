"""Ratchet job store on MySQL 8.0.16+ and MariaDB 10.6+ (PyMySQL).

Select it with a ``mysql://user:password@host:3306/dbname`` store URL (or
``mysql+pymysql://``); it is registered through the ``ratchet`` entry point, so installing
the package is enough. :meth:`MySQLJobStore.enqueue_in` adds a job inside the
application's own transaction.

The names below load on first use: Ratchet imports this package's ``_plugin`` module for
every installed plugin, and that must not import PyMySQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ratchet.spi import lazy_exports

if TYPE_CHECKING:
    from ratchet_store_mysql._transactional import SupportsTransactionalEnqueue
    from ratchet_store_mysql.schema import schema_sql
    from ratchet_store_mysql.store import MySQLJobStore

__all__ = ["MySQLJobStore", "SupportsTransactionalEnqueue", "schema_sql"]

_HOMES = {
    "MySQLJobStore": "ratchet_store_mysql.store",
    "SupportsTransactionalEnqueue": "ratchet_store_mysql._transactional",
    "schema_sql": "ratchet_store_mysql.schema",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

"""Ratchet job store on MongoDB 6+ and MongoDB-wire servers such as FerretDB 1.24 (pymongo).

Select it with a ``mongodb://host:27017/dbname`` (or ``mongodb+srv://``) store URL; it is
registered through the ``ratchet`` entry point, so installing the package is enough.

The names below load on first use: Ratchet imports this package's ``_plugin`` module for
every installed plugin, and that must not import pymongo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ratchet.spi import lazy_exports

if TYPE_CHECKING:
    from ratchet_store_mongodb.store import MongoDBJobStore

__all__ = ["MongoDBJobStore"]

_HOMES = {"MongoDBJobStore": "ratchet_store_mongodb.store"}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

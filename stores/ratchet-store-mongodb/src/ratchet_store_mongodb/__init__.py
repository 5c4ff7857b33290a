"""Ratchet job store on MongoDB 6+ and MongoDB-wire servers such as FerretDB 1.24 (pymongo).

Select it with a ``mongodb://host:27017/dbname`` (or ``mongodb+srv://``) store URL; it is
registered through the ``ratchet`` entry point, so installing the package is enough.

The names below load on first use: Ratchet imports this package's ``_plugin`` module for
every installed plugin, and that must not import pymongo.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet_store_mongodb.store import MongoDBJobStore

__all__ = ["MongoDBJobStore"]

_HOMES = {"MongoDBJobStore": "ratchet_store_mongodb.store"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

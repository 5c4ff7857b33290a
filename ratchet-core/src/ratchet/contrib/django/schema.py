"""Ratchet's tables as Django migrations: ``./manage.py migrate`` runs the store's own
shipped SQL migrations (the ``.sql`` files ``ratchet schema show`` prints), through the
store's migrator, on the databases that hold Ratchet's jobs.

The store's migrator keeps its own ledger (``ratchet_schema_version``) and applies only
what is pending, under the store's lock, so running it again is harmless and a database
first migrated by a Ratchet worker is simply up to date. A Ratchet release that ships a
new store migration ships a Django migration that calls :func:`apply_store_schema` again.
Migrating backwards leaves the tables in place: they hold the job history.
"""

from __future__ import annotations

from typing import Any

from ratchet.contrib.django.application import BACKEND_PATH
from ratchet.contrib.django.config import DjangoRatchetConfig, database_store_url, read_config
from ratchet.plugins import PluginRegistry
from ratchet.spi import SupportsSchema

__all__ = ["apply_store_schema", "configs_on_database"]


def configs_on_database(alias: str) -> list[DjangoRatchetConfig]:
    """Every Ratchet configuration (the settings', and each Ratchet task backend's) whose
    store is the Django database ``alias``."""
    from django.conf import settings  # type: ignore[import-untyped]

    configs = [read_config()]
    for entry in (getattr(settings, "TASKS", None) or {}).values():
        if str(entry.get("BACKEND", "")) in (
            BACKEND_PATH,
            "ratchet.contrib.django.backend.RatchetBackend",
        ):
            configs.append(read_config(entry.get("OPTIONS")))
    return [c for c in configs if c.joins_transactions and c.database == alias]


def apply_store_schema(_apps: Any, schema_editor: Any) -> None:
    """``RunPython`` forwards: apply the store's pending migrations on this migration's
    database when Ratchet keeps its jobs there (else nothing)."""
    alias = schema_editor.connection.alias
    if not configs_on_database(alias):
        return
    store = PluginRegistry.load().create_store(database_store_url(alias), auto_migrate=False)
    try:
        if isinstance(store, SupportsSchema):
            store.apply_schema()
    finally:
        store.close()

"""Connections of the embedded store, shared by store instances that open the same database,
and its schema migrations."""

from __future__ import annotations

import sqlite3
import threading
from importlib import resources
from typing import ClassVar

__all__ = ["DATA_TABLES", "SCHEMA_LEDGER", "Database", "migrations", "schema_sql"]

SCHEMA_LEDGER = """
CREATE TABLE IF NOT EXISTS ratchet_schema_version (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  REAL NOT NULL
)
"""


def migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("ratchet.stores.sqlite").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


DATA_TABLES = (
    "ratchet_recurring",
    "ratchet_job",
    "ratchet_job_tag",
    "ratchet_idempotency_key",
    "ratchet_execution",
    "ratchet_node",
    "ratchet_lock",
    "ratchet_recurring_fire",
    "ratchet_job_archive",
)


class Database:
    """One SQLite connection and the lock that serialises its use, shared by the store
    instances that opened it."""

    _shared: ClassVar[dict[str, Database]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str | None, busy_timeout: float, name: str | None = None) -> None:
        self.name = name
        self.lock = threading.RLock()
        self.users = 1
        self.conn = sqlite3.connect(
            ":memory:" if path is None else path,
            timeout=busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        if path is not None:
            self.conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a committed job survives a power cut, not only a process crash.
            self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")

    @classmethod
    def shared_memory(cls, name: str | None, busy_timeout: float) -> Database:
        if name is None:
            return cls(None, busy_timeout)
        with cls._shared_lock:
            database = cls._shared.get(name)
            if database is None:
                database = cls._shared[name] = cls(None, busy_timeout, name)
            else:
                database.users += 1
            return database

    def release(self) -> None:
        with self._shared_lock:
            self.users -= 1
            if self.users > 0:
                return
            if self.name is not None:
                self._shared.pop(self.name, None)
        self.conn.close()


def schema_sql() -> str:
    """Every migration of the embedded store's schema, in order, as plain SQL."""
    return "\n".join(f"-- {name}\n{text}" for _, name, text in migrations())

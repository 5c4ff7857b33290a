"""Connections of the embedded store, shared by store instances that open the same database,
and its schema migrations.

File permissions: a database file the store creates is readable and writable by its owner
only: mode 0600 where SQLite alone would use 0644 under the usual umask (a umask can only
remove permissions, and still does). SQLite gives the ``-wal`` and ``-shm`` files it adds
the database file's mode, so they are owner-only too. An existing file keeps its mode: to
share a database with a group, create the file first or ``chmod g+rw`` it, and its
``-wal``/``-shm`` follow.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from importlib import resources
from typing import ClassVar

__all__ = [
    "DATA_TABLES",
    "SCHEMA_LEDGER",
    "Database",
    "create_owner_only",
    "migrations",
    "schema_sql",
]

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
    "ratchet_job_log",
    "ratchet_job_progress",
    "ratchet_resource_slot",
    "ratchet_resource",
    "ratchet_paused_queue",
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
        if path is not None:
            create_owner_only(path)
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


def create_owner_only(path: str) -> None:
    """Create ``path`` as an empty file with mode 0600 (less what the umask removes), so
    that SQLite, which would create it world-readable (0644 under the usual umask), opens
    a private file; an empty file is an empty database to SQLite. Leaves an existing file
    (and its mode) alone, and leaves any failure (a missing folder, no permission) to
    SQLite's open, which reports it."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:  # FileExistsError: keep its mode; anything else: sqlite3 reports it
        return
    os.close(descriptor)


def schema_sql() -> str:
    """Every migration of the embedded store's schema, in order, as plain SQL."""
    return "\n".join(f"-- {name}\n{text}" for _, name, text in migrations())

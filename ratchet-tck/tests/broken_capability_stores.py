"""The mutation catalogue, capability half: broken transactional enqueue, migrations and
reconnection.

Each store changes one behaviour of the reference (``reference_stores.ReferenceStore``:
the embedded store with transactional enqueue and a droppable connection) or of the
embedded store's migrator, the way a store author's one-line mistake would;
``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

import reference_stores

from ratchet.errors import BusinessKeyConflictError, StoreUnavailableError
from ratchet.spi import NewJob
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

# Transactional enqueue.


class SelfCommittingEnqueueInStore(reference_stores.ReferenceStore):
    """``enqueue_many_in`` ignores the caller's connection and commits on its own."""

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        self.enqueue_many(jobs)


class ConflictRollsBackCallerStore(reference_stores.ReferenceStore):
    """Without a savepoint: a key conflict rolls back the caller's whole transaction."""

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        assert isinstance(connection, sqlite3.Connection)
        if not connection.in_transaction:
            connection.execute("BEGIN")
        try:
            now = connection.execute(sql.NOW).fetchone()[0]
            for job in jobs:
                self._insert(connection, now, job)
        except BaseException:
            connection.rollback()
            raise


class HolderLookedUpElsewhereStore(reference_stores.ReferenceStore):
    """Names the holder of a conflicting business key from the store's own connection,
    which cannot see the caller's uncommitted jobs."""

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        try:
            super().enqueue_many_in(connection, jobs)
        except BusinessKeyConflictError as exc:
            holder = self.find_active_job_by_business_key(exc.key)
            raise BusinessKeyConflictError(
                str(exc), key=exc.key, existing_job_id=holder.id if holder else None
            ) from exc


# Schema and migrations.


class UnrecordedMigrationsStore(SQLiteJobStore):
    """Applies pending migrations but never records them in the version ledger, so every
    apply runs them all again."""

    def apply_schema(self) -> list[str]:
        applied = super().apply_schema()
        with self._write() as (conn, _now):
            conn.execute("DELETE FROM ratchet_schema_version")
        return applied


class UnlockedMigratorStore(SQLiteJobStore):
    """Reads the version ledger before taking the write lock, then applies what it found
    missing: two nodes starting together both apply every migration."""

    def apply_schema(self) -> list[str]:
        with self._read() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS ratchet_schema_version "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM ratchet_schema_version")}
        time.sleep(0.2)  # the other nodes read the same ledger meanwhile
        applied: list[str] = []
        for version, name, text in _migrations():
            if version in done:
                continue
            with self._write() as (conn, now):
                for statement in text.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR REPLACE INTO ratchet_schema_version VALUES (?, ?, ?)",
                    (version, name, now),
                )
            applied.append(name)
        return applied


def _migrations() -> list[tuple[int, str, str]]:
    """The embedded store's migrations, as its migrator reads them."""
    from importlib import resources

    folder = resources.files("ratchet.stores.sqlite").joinpath("migrations")
    found = [
        (int(entry.name.split("_", 1)[0]), entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]
    return sorted(found)


# Reconnection.


class StaleConnectionStore(reference_stores.ReferenceStore):
    """Uses a connection the server dropped once, failing that call, and only then opens
    a new one: the first call after a restart fails."""

    def _check_open(self) -> None:
        SQLiteJobStore._check_open(self)
        if self._connection_lost():
            self._reconnect()
            raise StoreUnavailableError(f"{self.describe()}: the connection was closed")

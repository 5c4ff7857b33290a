"""The store's schema: plain ``.sql`` migrations and the migrator that applies them.

Migrations live in ``migrations/NNNN_name.sql`` and are applied in version order; each is
recorded in ``ratchet_schema_version`` after its last statement. MySQL commits every DDL
statement implicitly, so a migration is not one transaction: every statement of a
migration must be idempotent (``CREATE TABLE IF NOT EXISTS`` with its indexes inline), and
a run interrupted halfway is completed by the next one.

Several nodes starting together against an empty database are serialised by a named
lock (``GET_LOCK``, held by the migrating connection; the server drops it if that
connection dies): one applies each migration, the others wait and find nothing to do.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

import pymysql
from pymysql.connections import Connection

from ratchet.errors import StoreUnavailableError
from ratchet.spi.sql import Migration, load_migrations

__all__ = ["MIGRATION_LOCK_TIMEOUT", "Migration", "apply_migrations", "migrations", "schema_sql"]

ER_NO_SUCH_TABLE = 1146

MIGRATION_LOCK_TIMEOUT = 30
"""Seconds a starting node waits for another node's migration before giving up."""

_LEDGER = """
CREATE TABLE IF NOT EXISTS ratchet_schema_version (
    version     INT          NOT NULL,
    name        VARCHAR(255) NOT NULL,
    applied_at  DATETIME(6)  NOT NULL,
    PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
"""


# A statement ends with ";" at the end of a line (the files promise no ";" elsewhere at a
# line end, and none in comments).
def migrations() -> list[Migration]:
    """Every migration shipped with this package, in version order."""
    return load_migrations("ratchet_store_mysql")


def schema_sql() -> str:
    """Every migration of the MySQL store, in order, as plain SQL (no connection).

    This is what ``ratchet schema show mysql`` prints, for a DBA who applies the schema by
    hand; record each applied version in ``ratchet_schema_version`` too.
    """
    parts = [f"{_LEDGER.strip()};"]
    parts += [f"-- {m.name}\n{m.sql}" for m in migrations()]
    return "\n\n".join(parts)


def migration_lock_name(database: str) -> str:
    """The GET_LOCK name for ``database``. Named locks are server-wide (not per database)
    and at most 64 characters, so the name carries a digest of the database name."""
    digest = hashlib.sha256(database.encode("utf-8")).hexdigest()[:32]
    return f"ratchet-migrate-{digest}"


def _pending(conn: Connection[Any]) -> bool:
    """Whether some shipped migration is not recorded yet (read without any lock)."""
    with conn.cursor() as cursor:
        try:
            cursor.execute("SELECT version FROM ratchet_schema_version")
        except pymysql.err.ProgrammingError as exc:
            if exc.args[0] == ER_NO_SUCH_TABLE:
                return True
            raise
        done = {version for (version,) in cursor.fetchall()}
    return any(migration.version not in done for migration in migrations())


def apply_migrations(conn: Connection[Any], database: str) -> list[str]:
    """Apply every pending migration on ``conn`` (autocommit); returns the names applied.

    Idempotent, and safe when several processes call it at once on one database.
    """
    if not _pending(conn):
        return []  # the usual start: no lock, no DDL (so no DDL privilege needed either)
    lock = migration_lock_name(database)
    with conn.cursor() as cursor:
        cursor.execute("SELECT GET_LOCK(%s, %s)", (lock, MIGRATION_LOCK_TIMEOUT))
        row = cursor.fetchone()
        if row is None or row[0] != 1:
            raise StoreUnavailableError(
                f"Another node has been migrating database {database!r} for more than "
                f"{MIGRATION_LOCK_TIMEOUT} s (GET_LOCK({lock!r}) timed out); start again "
                "when it has finished, or look for a stuck migration in its process list."
            )
        try:
            cursor.execute(_LEDGER)
            cursor.execute("SELECT version FROM ratchet_schema_version")
            done = {version for (version,) in cursor.fetchall()}
            applied: list[str] = []
            for migration in migrations():
                if migration.version in done:
                    continue
                for statement in migration.statements():
                    cursor.execute(statement)  # DDL: each commits on its own
                cursor.execute(
                    "INSERT INTO ratchet_schema_version (version, name, applied_at) "
                    "VALUES (%s, %s, UTC_TIMESTAMP(6))",
                    (migration.version, migration.name),
                )
                applied.append(migration.name)
            return applied
        finally:
            # A connection that broke meanwhile has lost the lock with its session.
            with contextlib.suppress(pymysql.err.Error):
                cursor.execute("SELECT RELEASE_LOCK(%s)", (lock,))
                cursor.fetchall()

"""The store's schema: plain ``.sql`` migrations and the migrator that applies them.

Migrations live in ``migrations/NNNN_name.sql`` and are applied in version order, each in
the same transaction as its row in ``ratchet_schema_version``. The whole run holds a
transaction-scoped advisory lock, so several nodes starting together against an empty
database apply each migration exactly once: the others wait, then find nothing to do.
"""

from __future__ import annotations

import psycopg

from ratchet.spi.sql import Migration, load_migrations

__all__ = ["MIGRATION_LOCK_KEY", "Migration", "apply_migrations", "migrations", "schema_sql"]

# pg_advisory_xact_lock key shared by every Ratchet migrator on a database: the bytes
# "RATCHET1" read as a signed 64-bit integer.
MIGRATION_LOCK_KEY = int.from_bytes(b"RATCHET1", "big", signed=True)

_LEDGER = """
CREATE TABLE IF NOT EXISTS ratchet_schema_version (
    version     integer     PRIMARY KEY,
    name        text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT statement_timestamp()
)
"""


def migrations() -> list[Migration]:
    """Every migration shipped with this package, in version order."""
    return load_migrations("ratchet_store_postgresql")


def schema_sql() -> str:
    """Every migration of the PostgreSQL store, in order, as plain SQL (no connection).

    This is what ``ratchet schema show postgresql`` prints, for a DBA who applies the
    schema by hand; record each applied version in ``ratchet_schema_version`` too.
    """
    parts = [f"{_LEDGER.strip()};"]
    parts += [f"-- {m.name}\n{m.sql}" for m in migrations()]
    return "\n\n".join(parts)


def apply_migrations(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """Apply every pending migration on ``conn``; returns the names applied (idempotent).

    ``conn`` must be idle (no transaction open): the run is one transaction, committed at
    the end, holding the advisory lock :data:`MIGRATION_LOCK_KEY` from its first statement.
    """
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        conn.execute(_LEDGER)
        done = {row[0] for row in conn.execute("SELECT version FROM ratchet_schema_version")}
        for migration in migrations():
            if migration.version in done:
                continue
            # No parameters: psycopg sends the file as one simple query, several statements.
            conn.execute(migration.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO ratchet_schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration.name)
    return applied

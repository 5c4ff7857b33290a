"""Schema, the PostgreSQL specifics: the migration files and their DDL, the plugin
registration and ``ratchet schema show``. The upgrade from version 1 with live rows is in
``test_migrations.py``.

The kit's schema contracts (``ratchet_tck.store.schema``: idempotent and concurrent
apply, ``ratchet schema apply``, a reset that keeps the schema) run in
``test_conformance.py``, on blank databases of the plugin's harness.
"""

from __future__ import annotations

from ratchet_store_postgresql import schema_sql
from ratchet_store_postgresql.schema import migrations
from ratchet_tck.store import package_checks as checks
from ratchet_tck.store.shared.upgrades import SQL_MIGRATIONS, SQL_TABLES


def test_schema_sql_is_every_migration_without_a_connection() -> None:
    text = schema_sql()
    assert tuple(m.name for m in migrations()) == SQL_MIGRATIONS
    for table in SQL_TABLES | {"ratchet_schema_version"}:
        assert f"CREATE TABLE {table}" in text or f"EXISTS {table}" in text, table
    assert "WHERE status = 'PENDING'" in text  # the partial claim index


def test_plugin_is_registered_and_import_light() -> None:
    """The entry point serves both schemes; loading it does not import psycopg."""
    checks.assert_plugin_is_registered_and_import_light(
        ("postgresql+psycopg", "postgresql"),
        name="postgresql",
        package="ratchet-store-postgresql",
        driver="psycopg",
    )


def test_ratchet_schema_show_prints_the_ddl() -> None:
    assert "CREATE INDEX ratchet_job_claim" in checks.ratchet_schema_show("postgresql")

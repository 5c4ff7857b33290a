"""Schema, the MySQL specifics: the migration files and their repeatable DDL (MySQL commits
every DDL statement), the named migration lock, the plugin registration and ``ratchet
schema show``. Migrations on a server (interrupted, repeated, and the upgrade from version
1 with live rows) are in ``test_migrations.py``.

Idempotent and concurrent apply (threads and processes), ``ratchet schema apply`` and a
reset that keeps the schema are contracts of the kit (``ratchet_tck.store.schema``), run by
``test_conformance.py`` on blank databases of
:class:`~ratchet_store_mysql.harness.MySQLStoreHarness`.
"""

from __future__ import annotations

from ratchet_store_mysql import schema_sql
from ratchet_store_mysql.schema import migration_lock_name, migrations
from ratchet_tck.store import package_checks as checks
from ratchet_tck.store.shared.upgrades import SQL_MIGRATIONS, SQL_TABLES


def test_schema_sql_is_every_migration_without_a_connection() -> None:
    text = schema_sql()
    assert tuple(m.name for m in migrations()) == SQL_MIGRATIONS
    for table in SQL_TABLES | {"ratchet_schema_version"}:
        assert f"CREATE TABLE IF NOT EXISTS {table} (" in text, table
    assert "KEY ratchet_job_claim (status, priority, scheduled_at, id)" in text
    assert "GENERATED ALWAYS AS" in text  # the active business key


# The forms a statement may take: a table created only when missing, a DDL statement
# chosen from the catalogue and run through one prepared statement, or a repeatable UPDATE
# (that running them twice changes nothing more is checked on a server in
# test_migrations.py).
_IDEMPOTENT_FORMS = (
    "CREATE TABLE IF NOT EXISTS ",
    "SET @ratchet_ddl = IF(",
    "PREPARE ratchet_step FROM @ratchet_ddl",
    "EXECUTE ratchet_step",
    "DEALLOCATE PREPARE ratchet_step",
    "UPDATE ratchet_job SET ",
    "DROP TABLE IF EXISTS ",
)


def test_every_migration_statement_is_idempotent() -> None:
    """MySQL DDL commits implicitly, so a migration interrupted halfway is completed by
    running it again: each statement must be safe to repeat. No bare ALTER TABLE (MySQL
    has no ADD COLUMN IF NOT EXISTS): every later DDL is chosen from the catalogue."""
    for migration in migrations():
        statements = migration.statements()
        assert statements, migration.name
        for statement in statements:
            assert statement.startswith(_IDEMPOTENT_FORMS), statement[:60]
            assert ";" not in statement


def test_migration_lock_names_fit_the_server_limit() -> None:
    """GET_LOCK names are server-wide and at most 64 characters: one per database."""
    long_name = migration_lock_name("x" * 64)
    assert len(long_name) <= 64
    assert migration_lock_name("a") != migration_lock_name("b")


def test_plugin_is_registered_and_import_light() -> None:
    """The entry point serves both schemes; loading it does not import PyMySQL."""
    checks.assert_plugin_is_registered_and_import_light(
        ("mysql+pymysql", "mysql"), name="mysql", package="ratchet-store-mysql", driver="pymysql"
    )


def test_ratchet_schema_show_prints_the_ddl() -> None:
    assert "KEY ratchet_job_claim" in checks.ratchet_schema_show("mysql")

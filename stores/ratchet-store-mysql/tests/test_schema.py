"""Schema: plain SQL migrations, an idempotent migrator safe for nodes starting together,
the plugin registration and the ``ratchet schema`` commands."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from functools import partial

import pymysql
import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import SupportsSchema, SupportsTestReset
from ratchet_store_mysql import MySQLJobStore, schema_sql
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.schema import migration_lock_name, migrations
from ratchet_store_mysql.testing import drop_database, ensure_database, with_database
from ratchet_tck.store import run_concurrently

TABLES = {
    "ratchet_job",
    "ratchet_job_tag",
    "ratchet_idempotency_key",
    "ratchet_execution",
    "ratchet_node",
    "ratchet_lock",
    "ratchet_recurring",
    "ratchet_recurring_fire",
    "ratchet_job_archive",
}


def test_schema_sql_is_every_migration_without_a_connection() -> None:
    text = schema_sql()
    assert [m.name for m in migrations()] == ["0001_initial.sql"]
    for table in TABLES | {"ratchet_schema_version"}:
        assert f"CREATE TABLE IF NOT EXISTS {table} (" in text, table
    assert "KEY ratchet_job_claim (status, priority, scheduled_at, id)" in text
    assert "GENERATED ALWAYS AS" in text  # the active business key


def test_every_migration_statement_is_idempotent() -> None:
    """MySQL DDL commits implicitly, so a migration interrupted halfway is completed by
    running it again: each statement must be safe to repeat."""
    for migration in migrations():
        statements = migration.statements()
        assert statements, migration.name
        for statement in statements:
            assert statement.startswith("CREATE TABLE IF NOT EXISTS "), statement[:60]
            assert ";" not in statement


def test_migration_lock_names_fit_the_server_limit() -> None:
    """GET_LOCK names are server-wide and at most 64 characters: one per database."""
    long_name = migration_lock_name("x" * 64)
    assert len(long_name) <= 64
    assert migration_lock_name("a") != migration_lock_name("b")


def test_plugin_is_registered_and_import_light() -> None:
    """The entry point serves both schemes; loading it does not import PyMySQL."""
    registry = PluginRegistry.load()
    plugin = registry.store_plugin_for("mysql+pymysql://u@h/db")
    assert (plugin.name, plugin.package) == ("mysql", "ratchet-store-mysql")
    assert registry.store_plugin_for("mysql://u@h/db") is plugin
    code = (
        "import sys, ratchet_store_mysql._plugin as p; p.ratchet_job_stores(); "
        "print('pymysql' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ratchet_schema_show_prints_the_ddl() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ratchet", "schema", "show", "mysql"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "KEY ratchet_job_claim" in out.stdout


@pytest.fixture
def empty_database(mysql_url: str) -> Iterator[str]:
    """A new database with nothing in it, dropped after the test."""
    url = with_database(mysql_url, f"ratchet_test_mysql_{uuid.uuid4().hex[:10]}")
    ensure_database(url)
    yield url
    drop_database(url)


def _tables(url: str) -> tuple[list[tuple[int, str]], set[str]]:
    kwargs = parse_store_url(url).connect_kwargs
    with pymysql.connect(**kwargs) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT version, name FROM ratchet_schema_version")
        versions = [(int(v), str(n)) for v, n in cursor.fetchall()]
        cursor.execute("SHOW TABLES")
        return versions, {str(row[0]) for row in cursor.fetchall()}


@pytest.mark.server
def test_concurrent_nodes_apply_each_migration_once(empty_database: str) -> None:
    """Six stores open an empty database at once: one applies 0001, the others wait on the
    named lock and find nothing to do; applying again is a no-op."""
    stores = [MySQLJobStore.from_url(empty_database, auto_migrate=False) for _ in range(6)]
    try:
        results = run_concurrently([partial(store.apply_schema) for store in stores])
        assert sorted(map(str, results)) == ["['0001_initial.sql']"] + ["[]"] * 5
        assert stores[0].apply_schema() == []
    finally:
        for store in stores:
            store.close()
    versions, tables = _tables(empty_database)
    assert versions == [(1, "0001_initial.sql")]
    assert tables >= TABLES


@pytest.mark.server
def test_a_migration_interrupted_halfway_is_completed(empty_database: str) -> None:
    """DDL cannot be rolled back: simulate a run that created some tables and died before
    recording the version; the next start completes the schema."""
    kwargs = parse_store_url(empty_database).connect_kwargs
    [first, *_rest] = migrations()[0].statements()
    with pymysql.connect(**kwargs) as conn, conn.cursor() as cursor:
        cursor.execute(first)
    store = MySQLJobStore.from_url(empty_database)
    store.close()
    versions, tables = _tables(empty_database)
    assert versions == [(1, "0001_initial.sql")] and tables >= TABLES


@pytest.mark.server
def test_ratchet_schema_apply_command(empty_database: str) -> None:
    """``ratchet schema apply URL`` creates the schema, then reports it up to date."""
    command = [sys.executable, "-m", "ratchet", "schema", "apply", empty_database]
    first = subprocess.run(command, capture_output=True, text=True, check=True)
    again = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "Applied: 0001_initial.sql" in first.stdout
    assert "up to date" in again.stdout
    assert ":ratchet@" not in first.stdout + again.stdout


@pytest.mark.server
def test_reset_for_tests_empties_data_but_keeps_the_schema(store: MySQLJobStore) -> None:
    assert isinstance(store, SupportsSchema) and isinstance(store, SupportsTestReset)
    store.register_node("n")
    assert store.try_lock("l", 10, "n")
    store.reset_for_tests()
    assert store.list_nodes() == [] and store.try_lock("l", 10, "other")
    assert store.apply_schema() == []

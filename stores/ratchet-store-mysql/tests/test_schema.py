"""Schema, the MySQL specifics: the migration files and their repeatable DDL (MySQL commits
every DDL statement), the named migration lock, the plugin registration, ``ratchet schema
show``, an interrupted migration, and an upgrade from version 1 with live rows.

Idempotent and concurrent apply (threads and processes), ``ratchet schema apply`` and a
reset that keeps the schema are contracts of the kit (``ratchet_tck.store.schema``), run by
``test_conformance.py`` on blank databases of
:class:`~ratchet_store_mysql.harness.MySQLStoreHarness`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pymysql
import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import ORPHAN_RECOVERED_MESSAGE, ExecutionStatus, JobStatus
from ratchet_store_mysql import MySQLJobStore, schema_sql
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.harness import MySQLStoreHarness
from ratchet_store_mysql.schema import migration_lock_name, migrations

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


ALL_VERSIONS = [(1, "0001_initial.sql"), (2, "0002_crash_charges.sql")]


def test_schema_sql_is_every_migration_without_a_connection() -> None:
    text = schema_sql()
    assert [m.name for m in migrations()] == ["0001_initial.sql", "0002_crash_charges.sql"]
    for table in TABLES | {"ratchet_schema_version"}:
        assert f"CREATE TABLE IF NOT EXISTS {table} (" in text, table
    assert "KEY ratchet_job_claim (status, priority, scheduled_at, id)" in text
    assert "GENERATED ALWAYS AS" in text  # the active business key


# The forms a statement may take: a table created only when missing, a DDL statement
# chosen from the catalogue and run through one prepared statement, or a repeatable UPDATE
# (that running them twice changes nothing more is checked on a server below).
_IDEMPOTENT_FORMS = (
    "CREATE TABLE IF NOT EXISTS ",
    "SET @ratchet_ddl = IF(",
    "PREPARE ratchet_step FROM @ratchet_ddl",
    "EXECUTE ratchet_step",
    "DEALLOCATE PREPARE ratchet_step",
    "UPDATE ratchet_job SET ",
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
    harness = MySQLStoreHarness(mysql_url)
    with harness.blank_database() as url:
        yield url
    harness.close()


def _tables(url: str) -> tuple[list[tuple[int, str]], set[str]]:
    kwargs = parse_store_url(url).connect_kwargs
    with pymysql.connect(**kwargs) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT version, name FROM ratchet_schema_version ORDER BY version")
        versions = [(int(v), str(n)) for v, n in cursor.fetchall()]
        cursor.execute("SHOW TABLES")
        return versions, {str(row[0]) for row in cursor.fetchall()}


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
    assert versions == ALL_VERSIONS and tables >= TABLES


def _run(url: str, statements: list[str]) -> None:
    kwargs = parse_store_url(url).connect_kwargs
    with pymysql.connect(**kwargs, autocommit=True) as conn, conn.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def _record_version_1(url: str) -> None:
    """The ledger as version 1 of the store left it."""
    first = migrations()[0]
    _run(url, first.statements())
    _run(
        url,
        [
            "CREATE TABLE ratchet_schema_version (version INT NOT NULL, name VARCHAR(255) "
            "NOT NULL, applied_at DATETIME(6) NOT NULL, PRIMARY KEY (version))",
            "INSERT INTO ratchet_schema_version VALUES (1, '0001_initial.sql', UTC_TIMESTAMP(6))",
        ],
    )


# Written as version 1 of the store wrote them: a job claimed (and started) by node
# "old-node" an hour ago, with its open execution record, and a pending job that crashed
# twice before.
_V1_ROWS = [
    """INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
        attempts, max_retries, backoff, backoff_ms, crash_count, claim_seq, owner, claimed_at,
        tags_json, params_json, scheduled_at, created_at, started_at, updated_at)
    VALUES ('v1-running', 'j', 'tests:noop', '[]', '{}', 'RUNNING', 2, 0, 3, 'NONE', 0, 1, 2,
            'old-node', UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, '[]', '{}',
            UTC_TIMESTAMP(6) - INTERVAL 2 HOUR, UTC_TIMESTAMP(6) - INTERVAL 2 HOUR,
            UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR),
           ('v1-pending', 'j', 'tests:noop', '[]', '{}', 'PENDING', 2, 0, 3, 'NONE', 0, 2, 2,
            NULL, NULL, '[]', '{}', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), NULL,
            UTC_TIMESTAMP(6))""",
    """INSERT INTO ratchet_execution (job_id, claim_seq, attempt, node_id, status, started_at)
    VALUES ('v1-running', 2, 1, 'old-node', 'RUNNING', UTC_TIMESTAMP(6) - INTERVAL 1 HOUR)""",
]


@pytest.mark.server
def test_upgrading_from_version_1_keeps_running_claims_charged(empty_database: str) -> None:
    """A database at version 1 with a RUNNING claim: 0002 marks its start as recorded
    (every claim of version 1 started its job), so crash recovery still charges it; the
    redeliveries so far are its crashes; the store then works on the upgraded schema."""
    _record_version_1(empty_database)
    _run(empty_database, _V1_ROWS)
    store = MySQLJobStore.from_url(empty_database, auto_migrate=False)
    try:
        assert store.apply_schema() == ["0002_crash_charges.sql"]
        pending = store.claim_due_jobs(node_id="new-node", limit=5, priority_boost_seconds=0)
        assert [(job.id, job.redeliveries) for job in pending] == [("v1-pending", 2)]
        recovery = store.recover_node_claims("old-node", max_crash_redeliveries=3, limit=10)
        assert (recovery.reset, recovery.exhausted) == (1, ())
        job = store.get_job("v1-running")
        assert job is not None and (job.status, job.crash_count) == (JobStatus.PENDING, 2)
        [execution] = store.list_executions("v1-running")
        assert (execution.status, execution.message) == (
            ExecutionStatus.FAILED,
            ORPHAN_RECOVERED_MESSAGE,
        )
        [again] = store.claim_due_jobs(node_id="new-node", limit=1, priority_boost_seconds=0)
        assert (again.id, again.redeliveries) == ("v1-running", 2)
        assert store.release_claim(again.id, again.claim_seq, message="drain")
        assert store.list_executions(again.id)[-1].status is ExecutionStatus.RELEASED
    finally:
        store.close()


@pytest.mark.server
def test_the_second_migration_can_run_again_from_any_statement(empty_database: str) -> None:
    """0002 stopped after any of its statements (DDL cannot be rolled back) is completed by
    running it again from the start; running it a third time changes nothing. The
    execution status check then accepts RELEASED and still refuses unknown statuses."""
    _record_version_1(empty_database)
    _run(empty_database, _V1_ROWS)
    second = migrations()[1].statements()
    for stop in range(1, len(second) + 1):
        _run(empty_database, second[:stop])
    _run(empty_database, second)
    store = MySQLJobStore.from_url(empty_database)  # records version 2, runs 0002 again
    store.close()
    kwargs = parse_store_url(empty_database).connect_kwargs
    with pymysql.connect(**kwargs, autocommit=True) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT CAST(id AS CHAR), started_seq, redeliveries FROM ratchet_job ORDER BY id"
        )
        assert cursor.fetchall() == (("v1-pending", 0, 2), ("v1-running", 2, 1))
        cursor.execute(
            "UPDATE ratchet_execution SET status = 'RELEASED' WHERE job_id = 'v1-running'"
        )
        with pytest.raises(pymysql.err.OperationalError) as refused:
            cursor.execute(
                "UPDATE ratchet_execution SET status = 'GONE' WHERE job_id = 'v1-running'"
            )
        assert refused.value.args[0] in (3819, 4025)  # MySQL / MariaDB: CHECK violated
    versions, _tables_now = _tables(empty_database)
    assert versions == ALL_VERSIONS

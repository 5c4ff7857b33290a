"""Schema, the PostgreSQL specifics: the migration files and their DDL, the plugin
registration, ``ratchet schema show``, and an upgrade from version 1 with live rows.

Idempotent and concurrent apply (threads and processes), ``ratchet schema apply`` and a
reset that keeps the schema are contracts of the kit (``ratchet_tck.store.schema``), run by
``test_conformance.py`` on blank databases of
:class:`~ratchet_store_postgresql.harness.PostgreSQLStoreHarness`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import ORPHAN_RECOVERED_MESSAGE, ExecutionStatus, JobStatus
from ratchet_store_postgresql import PostgreSQLJobStore, schema_sql
from ratchet_store_postgresql.harness import PostgreSQLStoreHarness
from ratchet_store_postgresql.schema import migrations

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
    assert [m.name for m in migrations()] == ["0001_initial.sql", "0002_crash_charges.sql"]
    for table in TABLES | {"ratchet_schema_version"}:
        assert f"CREATE TABLE {table}" in text or f"EXISTS {table}" in text, table
    assert "WHERE status = 'PENDING'" in text  # the partial claim index


def test_plugin_is_registered_and_import_light() -> None:
    """The entry point serves both schemes; loading it does not import psycopg."""
    registry = PluginRegistry.load()
    plugin = registry.store_plugin_for("postgresql+psycopg://u@h/db")
    assert (plugin.name, plugin.package) == ("postgresql", "ratchet-store-postgresql")
    assert registry.store_plugin_for("postgresql://u@h/db") is plugin
    code = (
        "import sys, ratchet_store_postgresql._plugin as p; p.ratchet_job_stores(); "
        "print('psycopg' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ratchet_schema_show_prints_the_ddl() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ratchet", "schema", "show", "postgresql"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "CREATE INDEX ratchet_job_claim" in out.stdout


@pytest.fixture
def empty_database(postgresql_url: str) -> Iterator[str]:
    """A new database with nothing in it, dropped after the test."""
    harness = PostgreSQLStoreHarness(postgresql_url)
    with harness.blank_database() as url:
        yield url
    harness.close()


# Written as version 1 of the store wrote them: a job claimed (and started) by node
# "old-node", with its open execution record, and a pending job that crashed twice before.
_V1_ROWS = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
    attempts, max_retries, backoff, backoff_ms, crash_count, claim_seq, owner, claimed_at,
    scheduled_at, created_at, started_at, updated_at)
VALUES ('v1-running', 'j', 'tests:noop', '[]', '{}', 'RUNNING', 2, 0, 3, 'NONE', 0, 1, 2,
        'old-node', now() - interval '1 hour', now() - interval '2 hours',
        now() - interval '2 hours', now() - interval '1 hour', now() - interval '1 hour'),
       ('v1-pending', 'j', 'tests:noop', '[]', '{}', 'PENDING', 2, 0, 3, 'NONE', 0, 2, 2,
        NULL, NULL, now(), now(), NULL, now());
INSERT INTO ratchet_execution (job_id, claim_seq, attempt, node_id, status, started_at)
VALUES ('v1-running', 2, 1, 'old-node', 'RUNNING', now() - interval '1 hour');
"""


@pytest.mark.server
def test_upgrading_from_version_1_keeps_running_claims_charged(empty_database: str) -> None:
    """A database at version 1 with a RUNNING claim: 0002 marks its start as recorded
    (every claim of version 1 started its job), so crash recovery still charges it; the
    redeliveries so far are its crashes; the store then works on the upgraded schema."""
    [first, second] = migrations()
    with psycopg.connect(empty_database) as conn:
        conn.execute(first.sql.encode("utf-8"))
        conn.execute(
            "CREATE TABLE ratchet_schema_version (version integer PRIMARY KEY, name text "
            "NOT NULL, applied_at timestamptz NOT NULL DEFAULT statement_timestamp())"
        )
        conn.execute("INSERT INTO ratchet_schema_version VALUES (1, %s)", (first.name,))
        conn.execute(_V1_ROWS.encode("utf-8"))
    store = PostgreSQLJobStore.from_url(empty_database, auto_migrate=False)
    try:
        assert store.apply_schema() == [second.name]
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

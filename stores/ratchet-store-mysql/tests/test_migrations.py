"""Migrations on a server, the MySQL specifics: a migration interrupted halfway is
completed, the second one can run again from any statement, and the kit's upgrade from
version 1 with live rows (``ratchet_tck.store.shared``) runs on version 1 as this
store wrote it. Each test works in a blank database of
:class:`~ratchet_store_mysql.harness.MySQLStoreHarness`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pymysql
import pytest

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.harness import MySQLStoreHarness
from ratchet_store_mysql.schema import migrations
from ratchet_tck.store.shared.upgrades import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.upgrades import SQL_MIGRATIONS, SQL_TABLES

pytestmark = pytest.mark.server

ALL_VERSIONS = [(n, name) for n, name in enumerate(SQL_MIGRATIONS, start=1)]


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
    assert versions == ALL_VERSIONS and tables >= SQL_TABLES


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


@pytest.fixture
def version_1_database() -> Callable[[str], list[str]]:
    """Version 1 as this store wrote it, for the kit's upgrade test."""

    def write(url: str) -> list[str]:
        _record_version_1(url)
        _run(url, _V1_ROWS)
        return [migration.name for migration in migrations()[1:]]

    return write


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


def _purge_indexes(url: str) -> dict[str, list[str]]:
    """The columns, in order, of each index migration 0004 adds (absent: not there)."""
    kwargs = parse_store_url(url).connect_kwargs
    with pymysql.connect(**kwargs) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME IN "
            "('ratchet_job_archive_finished', 'ratchet_job_dead_letters') "
            "ORDER BY INDEX_NAME, SEQ_IN_INDEX"
        )
        found: dict[str, list[str]] = {}
        for index, column in cursor.fetchall():
            found.setdefault(str(index), []).append(str(column))
        return found


def test_the_purge_indexes_can_be_added_again_from_any_statement(empty_database: str) -> None:
    """0004 stopped after any of its statements is completed by running it again from the
    start, and a third run changes nothing: each index exists once, with its columns. A
    bare ADD KEY would fail the second run (duplicate key name)."""
    earlier = migrations()[:3]
    assert [m.name for m in earlier] == [name for _version, name in ALL_VERSIONS[:3]]
    for migration in earlier:
        _run(empty_database, migration.statements())
    assert _purge_indexes(empty_database) == {}
    fourth = migrations()[3].statements()
    for stop in range(1, len(fourth) + 1):
        _run(empty_database, fourth[:stop])
    _run(empty_database, fourth)
    assert _purge_indexes(empty_database) == {
        "ratchet_job_archive_finished": ["finished_at", "id"],
        "ratchet_job_dead_letters": ["status", "finished_at", "id"],
    }


def _query_indexes(url: str) -> dict[str, list[tuple[str, int | None]]]:
    """The (column, prefix length) parts of each index migration 0005 adds."""
    kwargs = parse_store_url(url).connect_kwargs
    with pymysql.connect(**kwargs) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME IN "
            "('ratchet_job_name_created', 'ratchet_job_business_key_created') "
            "ORDER BY INDEX_NAME, SEQ_IN_INDEX"
        )
        found: dict[str, list[tuple[str, int | None]]] = {}
        for index, column, prefix in cursor.fetchall():
            found.setdefault(str(index), []).append(
                (str(column), None if prefix is None else int(prefix))
            )
        return found


def test_the_query_indexes_can_be_added_again_from_any_statement(empty_database: str) -> None:
    """0005 stopped after any of its statements is completed by running it again from the
    start, and a third run changes nothing: each index exists once, with its columns (the
    name as a 255-character prefix: it is TEXT). A bare ADD KEY would fail the second run."""
    earlier = migrations()[:4]
    assert [m.name for m in earlier] == [name for _version, name in ALL_VERSIONS[:4]]
    for migration in earlier:
        _run(empty_database, migration.statements())
    assert _query_indexes(empty_database) == {}
    fifth = migrations()[4].statements()
    for stop in range(1, len(fifth) + 1):
        _run(empty_database, fifth[:stop])
    _run(empty_database, fifth)
    assert _query_indexes(empty_database) == {
        "ratchet_job_business_key_created": [
            ("business_key", None),
            ("created_at", None),
            ("id", None),
        ],
        "ratchet_job_name_created": [("name", 255), ("created_at", None), ("id", None)],
    }

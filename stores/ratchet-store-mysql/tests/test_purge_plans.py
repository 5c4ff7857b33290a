"""The batched purges read their batch through an index, not a scan of the whole table.

Checked by plan shape, never by timing, in a blank database of
:class:`~ratchet_store_mysql.harness.MySQLStoreHarness` at the shipped schema holding
20,000 finished jobs (one in nine FAILED), archived too: EXPLAIN of each batch must show a
range read of its index from migration 0004 (``ratchet_job_archive_finished`` for the
archive purge, ``ratchet_job_dead_letters`` for the dead-letter purge) and no filesort.
The negative control drops an index and shows the check notices.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
from pymysql.connections import Connection

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql import _sql as sql
from ratchet_store_mysql._pool import connect
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.harness import MySQLStoreHarness
from ratchet_store_mysql.schema import migrations

pytestmark = pytest.mark.server

JOBS = 20_000

_DIGITS = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
_NUMBERS = " CROSS JOIN ".join(f"({_DIGITS}) AS {t}" for t in "abcde")

# Finished over the last 12 days, most SUCCEEDED: the dead-letter purge's cut-off (an hour
# ago) leaves nearly every one of them older, so reading ratchet_job_finished would walk
# eight other jobs per dead letter.
_FILL_JOBS = f"""
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, tags_json, params_json,
                         scheduled_at, created_at, finished_at, updated_at)
SELECT CONCAT('purge-', LPAD(n, 6, '0')), 'purge', 'tests:noop', '[]', '{{}}',
       ELT(1 + n % 9, 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED',
           'SUCCEEDED', 'SUCCEEDED', 'CANCELED', 'FAILED'),
       2, 3, 'NONE', 0, '[]', '{{}}', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),
       UTC_TIMESTAMP(6) - INTERVAL (50 * n) SECOND, UTC_TIMESTAMP(6)
FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d + 1 AS n
      FROM {_NUMBERS}) AS numbers
WHERE n <= {JOBS}
"""

# (statement, table, the index its batch must come from)
PURGES = [
    ("purge_archived_jobs", "ratchet_job_archive", "ratchet_job_archive_finished"),
    ("select_dead_letters", "ratchet_job", "ratchet_job_dead_letters"),
]


@pytest.fixture(scope="module")
def schema(mysql_url: str) -> Iterator[Connection[Any]]:
    """An autocommit connection to a blank database at the shipped schema, filled."""
    harness = MySQLStoreHarness(mysql_url)
    try:
        with harness.blank_database() as url:
            MySQLJobStore.from_url(url).close()
            conn = connect(parse_store_url(url))
            try:
                with conn.cursor() as cursor:
                    cursor.execute(_FILL_JOBS)
                    cursor.execute(
                        "SELECT COLUMN_NAME FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive' "
                        "AND COLUMN_NAME <> 'archived_at' ORDER BY ORDINAL_POSITION"
                    )
                    columns = ", ".join(str(row[0]) for row in cursor.fetchall())
                    cursor.execute(
                        f"INSERT INTO ratchet_job_archive ({columns}, archived_at) "
                        f"SELECT {columns}, UTC_TIMESTAMP(6) FROM ratchet_job"
                    )
                    cursor.execute("ANALYZE TABLE ratchet_job, ratchet_job_archive")
                    cursor.fetchall()
                yield conn
            finally:
                conn.close()
    finally:
        harness.close()


def assert_batch_comes_from(conn: Connection[Any], statement: str, table: str, index: str) -> None:
    """EXPLAIN of the batch: one range read of ``table`` through ``index``, not sorted
    ("Using filesort" would mean every row before the cut-off is read and sorted)."""
    params = {"age": 3600 * 10**6, "limit": 100}
    with conn.cursor(pymysql.cursors.DictCursor) as cursor:
        cursor.execute(f"EXPLAIN {sql.STATEMENTS[statement]}", params)
        plan = list(cursor.fetchall())
    reads = [(row["type"], row["key"], row["Extra"]) for row in plan if row["table"] == table]
    assert [(kind, key) for kind, key, _extra in reads] == [("range", index)], (
        f"{statement} reads {table} as {reads}, not as a range of {index}"
    )
    assert not [extra for _kind, _key, extra in reads if "filesort" in (extra or "")], (
        f"{statement} sorts its batch: {reads}"
    )


@pytest.mark.parametrize(("statement", "table", "index"), PURGES)
def test_each_purge_batch_is_a_range_of_its_index(
    schema: Connection[Any], statement: str, table: str, index: str
) -> None:
    """On failure: migration 0004 no longer adds the index, or the statement's WHERE /
    ORDER BY no longer matches it (the dead-letter index leads with status)."""
    assert_batch_comes_from(schema, statement, table, index)


@pytest.mark.parametrize(("statement", "table", "index"), PURGES)
def test_negative_control_without_the_index_the_check_fails(
    schema: Connection[Any], statement: str, table: str, index: str
) -> None:
    """Dropped, the archive purge falls back to a full scan and a filesort and the
    dead-letter purge to ratchet_job_finished: the check reports it. Running migration
    0004 again puts the index back (and shows it repeats safely)."""
    with schema.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} DROP KEY {index}")
    try:
        with pytest.raises(AssertionError, match=statement):
            assert_batch_comes_from(schema, statement, table, index)
    finally:
        with schema.cursor() as cursor:
            for step in migrations()[3].statements():
                cursor.execute(step)
    assert_batch_comes_from(schema, statement, table, index)

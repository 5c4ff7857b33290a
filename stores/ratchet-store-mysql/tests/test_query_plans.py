"""The dashboard's job queries read their page through an index in page order.

Checked by plan shape, never by timing, in a blank database of
:class:`~ratchet_store_mysql.harness.MySQLStoreHarness` at the shipped schema holding
100,000 jobs (50 names, one in a hundred FAILED, one PENDING, one CANCELED, the rest
SUCCEEDED; a tenth with a business key, a tenth with a tag of a hundred; created in ties
of three), after ANALYZE TABLE: EXPLAIN
of each common query (no filter, a deep cursor, a name, a business key, several
statuses) must read ``ratchet_job`` through its driving index (migration 0005's for a
name or a business key) with no filesort (a filesort reads and sorts every match before
the first row) and never the whole table; a tag reads the tag table's key first. The
same checks passed at 1,000,000 jobs when the queries were written (``JOBS`` below). The
negative control drops an index and shows the check notices.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pymysql
import pytest
from pymysql.connections import Connection

from ratchet.spi import JobCursor, JobQuery
from ratchet.spi.sql import driving_statement
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql import _sql as sql
from ratchet_store_mysql._pool import connect
from ratchet_store_mysql._rows import text
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.harness import MySQLStoreHarness
from ratchet_tck.store.shared.claim_plans import job_query_plans

pytestmark = pytest.mark.server

JOBS = 100_000
LIMIT = 50

_DIGITS = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
_NUMBERS = " CROSS JOIN ".join(f"({_DIGITS}) AS {t}" for t in "abcdef")
_N = "a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d + 100000 * f.d + 1"

_FILL_JOBS = f"""
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, business_key, tags_json,
                         params_json, scheduled_at, created_at, finished_at, updated_at)
SELECT CONCAT('q-', LPAD(n, 7, '0')), CONCAT('job.', n % 50), 'tests:noop', '[]', '{{}}',
       CASE n % 100 WHEN 97 THEN 'FAILED' WHEN 98 THEN 'PENDING' WHEN 99 THEN 'CANCELED'
            ELSE 'SUCCEEDED' END,
       2, 3, 'NONE', 0, IF(n % 10 = 3, CONCAT('key-', n % 997), NULL), '[]', '{{}}',
       UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) - INTERVAL (n DIV 3) SECOND,
       IF(n % 100 <> 98, UTC_TIMESTAMP(6), NULL), UTC_TIMESTAMP(6)
FROM (SELECT {_N} AS n FROM {_NUMBERS}) AS numbers
WHERE n <= {JOBS}
"""

_FILL_TAGS = f"""
INSERT INTO ratchet_job_tag (tag, job_id)
SELECT CONCAT('tag-', n DIV 10 % 100), CONCAT('q-', LPAD(n, 7, '0'))
FROM (SELECT {_N} AS n FROM {_NUMBERS}) AS numbers
WHERE n <= {JOBS} AND n % 10 = 0
"""

QUERIES = job_query_plans(LIMIT)


@pytest.fixture(scope="module")
def filled(mysql_url: str) -> Iterator[tuple[MySQLJobStore, Connection[Any]]]:
    """The store and an autocommit connection on a blank database at the shipped
    schema, filled."""
    harness = MySQLStoreHarness(mysql_url)
    try:
        with harness.blank_database() as url:
            store = MySQLJobStore.from_url(url)
            conn = connect(parse_store_url(url))
            try:
                with conn.cursor() as cursor:
                    cursor.execute(_FILL_JOBS)
                    cursor.execute(_FILL_TAGS)
                    cursor.execute("ANALYZE TABLE ratchet_job, ratchet_job_tag")
                    cursor.fetchall()
                yield store, conn
            finally:
                conn.close()
                store.close()
    finally:
        harness.close()


def explain(
    store: MySQLJobStore, conn: Connection[Any], query: JobQuery
) -> tuple[str, list[dict[str, Any]]]:
    name = driving_statement(query)
    params = store._query_params(query, limit=query.limit, job_id=None)
    with conn.cursor(pymysql.cursors.DictCursor) as cursor:
        cursor.execute(f"EXPLAIN {sql.STATEMENTS[name]}", params)
        return name, list(cursor.fetchall())


def assert_reads_in_page_order(
    store: MySQLJobStore, conn: Connection[Any], query: JobQuery, index: str
) -> None:
    """Every read of ratchet_job goes through ``index``, none is a full scan (type ALL)
    and none is sorted (the index gives the page order)."""
    name, plan = explain(store, conn, query)
    reads = [
        (row["type"], row["key"], row["Extra"]) for row in plan if row["table"] == "ratchet_job"
    ]
    assert reads and all(key == index and kind != "ALL" for kind, key, _extra in reads), (
        f"{name} reads ratchet_job as {reads}, not through {index}"
    )
    assert not [extra for _kind, _key, extra in reads if "filesort" in (extra or "")], (
        f"{name} sorts every match: {reads}"
    )


@pytest.mark.parametrize(("what", "query", "index"), QUERIES, ids=[q[0] for q in QUERIES])
def test_each_common_query_reads_in_page_order(
    filled: tuple[MySQLJobStore, Connection[Any]], what: str, query: JobQuery, index: str
) -> None:
    """On failure: migration 0005 no longer adds the index, the driving statement's
    WHERE / ORDER BY no longer matches it, or a bound became ``? IS NULL OR ...``."""
    store, conn = filled
    assert_reads_in_page_order(store, conn, query, index)


def test_a_deep_cursor_keeps_the_index_order(
    filled: tuple[MySQLJobStore, Connection[Any]],
) -> None:
    """Half-way down the table the page still comes from the driving index, unsorted.
    On failure: the cursor condition is no longer a range of the index."""
    store, conn = filled
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT created_at, id FROM ratchet_job ORDER BY created_at DESC, id DESC "
            "LIMIT 1 OFFSET %s",
            (JOBS // 2,),
        )
        created_at, job_id = cursor.fetchone()
    after = JobCursor(created_at=created_at.replace(tzinfo=UTC), id=text(job_id))
    assert_reads_in_page_order(store, conn, JobQuery(after=after), "ratchet_job_created")
    assert_reads_in_page_order(
        store, conn, JobQuery(name="job.7", after=after), "ratchet_job_name_created"
    )


def test_a_tag_reads_the_tag_key_first(filled: tuple[MySQLJobStore, Connection[Any]]) -> None:
    """A tag reads its own entries of the tag table's key, then each job by id; never the
    whole job table. On failure: the tag is matched in tags_json."""
    store, conn = filled
    _name, plan = explain(store, conn, JobQuery(tag="tag-10"))
    full = [row for row in plan if row["table"] == "ratchet_job" and row["type"] == "ALL"]
    assert not full, f"a tag query scans ratchet_job: {plan}"


def test_negative_control_without_the_name_index_the_check_fails(
    filled: tuple[MySQLJobStore, Connection[Any]],
) -> None:
    """Dropped (and added back), a name query reads another index or sorts: the check
    reports it."""
    store, conn = filled
    with conn.cursor() as cursor:
        cursor.execute("ALTER TABLE ratchet_job DROP KEY ratchet_job_name_created")
    try:
        with pytest.raises(AssertionError, match="query_jobs_by_name"):
            assert_reads_in_page_order(
                store, conn, JobQuery(name="job.7"), "ratchet_job_name_created"
            )
    finally:
        with conn.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE ratchet_job ADD KEY ratchet_job_name_created "
                "(name(255), created_at, id)"
            )

"""The dashboard's job queries read about a page of rows, whatever the table holds.

Checked by plan shape and row counts, never by timing, in a blank database of the store's
harness at the shipped schema holding 100,000 jobs (50 names, one in a hundred FAILED,
one PENDING, one CANCELED, the rest SUCCEEDED; a tenth with a tag of a hundred, a tenth
with a business key; created in ties of three), after ANALYZE, with the planner free to
choose: EXPLAIN ANALYZE of each common
query (no filter, a deep cursor, a name, a business key, several statuses) must read
``ratchet_job`` only through its driving index (migration 0005's for a name or a business
key), and read at most a few pages' worth of index entries; a tag reads that tag's jobs
and never scans the table. The same checks passed at 1,000,000 jobs when the queries were
written (``JOBS`` below). The negative control drops an index and shows the check notices.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ratchet.spi import JobCursor, JobQuery
from ratchet.spi.sql import driving_statement
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._statements import STATEMENTS
from ratchet_store_postgresql.harness import PostgreSQLStoreHarness
from ratchet_tck.store.shared.claim_plans import job_query_plans

pytestmark = pytest.mark.server

JOBS = 100_000
LIMIT = 50
# Rows a page may read from ratchet_job: the page, the ties at its edge, and per status
# branch its own page (five of them at most).
BUDGET = 6 * LIMIT

_FILL_JOBS = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, business_key, scheduled_at,
                         created_at, finished_at, updated_at, claimed_at)
SELECT 'q-' || lpad(n::text, 7, '0'), 'job.' || (n %% 50), 'tests:noop', '[]', '{}',
       CASE n %% 100 WHEN 97 THEN 'FAILED' WHEN 98 THEN 'PENDING' WHEN 99 THEN 'CANCELED'
            ELSE 'SUCCEEDED' END,
       2, 3, 'NONE', 0, CASE WHEN n %% 10 = 3 THEN 'key-' || (n %% 997) END,
       statement_timestamp(), statement_timestamp() - make_interval(secs => n / 3),
       CASE WHEN n %% 100 <> 98 THEN statement_timestamp() END, statement_timestamp(), NULL
FROM generate_series(1, %s) AS n
"""

_FILL_TAGS = """
INSERT INTO ratchet_job_tag (tag, job_id)
SELECT 'tag-' || (n / 10 %% 100), 'q-' || lpad(n::text, 7, '0')
FROM generate_series(10, %s, 10) AS n
"""

QUERIES = job_query_plans(LIMIT)


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


@pytest.fixture(scope="module")
def filled(postgresql_url: str) -> Iterator[tuple[PostgreSQLJobStore, psycopg.Connection[Any]]]:
    """The store and a connection on a blank database at the shipped schema, filled."""
    harness = PostgreSQLStoreHarness(postgresql_url)
    try:
        with harness.blank_database() as url:
            store = PostgreSQLJobStore.from_url(url)
            try:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(_FILL_JOBS, (JOBS,))
                    conn.execute(_FILL_TAGS, (JOBS,))
                    conn.execute("ANALYZE ratchet_job, ratchet_job_tag")
                    yield store, conn
            finally:
                store.close()
    finally:
        harness.close()


def explain(
    store: PostgreSQLJobStore, conn: psycopg.Connection[Any], name: str, query: JobQuery
) -> list[dict[str, Any]]:
    """The plan nodes of ``name`` run with ``query``'s parameters (EXPLAIN ANALYZE)."""
    params = store._query_params(query, limit=query.limit, job_id=None)
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {STATEMENTS[name]}", params).fetchone()
    assert row is not None
    return list(_nodes(row[0][0]["Plan"]))


def assert_reads_a_page(
    store: PostgreSQLJobStore, conn: psycopg.Connection[Any], query: JobQuery, index: str | None
) -> None:
    """Every read of ratchet_job goes through an index (``index`` when given; a bitmap
    scan of it for a handful of rows) and together they read at most :data:`BUDGET`
    rows."""
    name = driving_statement(query)
    nodes = explain(store, conn, name, query)
    reads = [node for node in nodes if node.get("Relation Name") == "ratchet_job"]
    used = {
        str(node["Index Name"])
        for node in nodes
        if node.get("Index Name") and not str(node["Index Name"]).startswith("ratchet_job_tag")
    }
    described = [(n["Node Type"], n.get("Index Name"), _examined(n)) for n in reads]
    assert (
        reads
        and all(
            node["Node Type"] in ("Index Scan", "Index Only Scan", "Bitmap Heap Scan")
            for node in reads
        )
        and (index is None or used == {index})
    ), f"{name} reads ratchet_job as {described} through {sorted(used)}, not {index}"
    examined = sum(_examined(node) for node in reads)
    assert examined <= BUDGET, f"{name} read {examined} rows of ratchet_job: {described}"


def _examined(node: dict[str, Any]) -> int:
    """Rows a scan node read: those it returned and those its filter removed (both are
    per loop in EXPLAIN's output)."""
    per_loop = float(node.get("Actual Rows", 0)) + float(node.get("Rows Removed by Filter", 0))
    return round(per_loop * float(node.get("Actual Loops", 1)))


@pytest.mark.parametrize(("what", "query", "index"), QUERIES, ids=[q[0] for q in QUERIES])
def test_each_common_query_reads_about_a_page(
    filled: tuple[PostgreSQLJobStore, psycopg.Connection[Any]],
    what: str,
    query: JobQuery,
    index: str | None,
) -> None:
    """On failure: migration 0005 no longer creates the index, the driving statement's
    WHERE / ORDER BY no longer matches it, or a bound became ``? IS NULL OR ...``."""
    store, conn = filled
    assert_reads_a_page(store, conn, query, index)


def test_a_deep_cursor_starts_its_range_at_the_cursor(
    filled: tuple[PostgreSQLJobStore, psycopg.Connection[Any]],
) -> None:
    """Page 1,000 costs what page 1 does: the cursor bounds the index range.

    On failure: the cursor is only a filter (``(created_at, id) <`` written so that the
    planner cannot use it as an index condition)."""
    store, conn = filled
    row = conn.execute(
        "SELECT created_at, id FROM ratchet_job ORDER BY created_at DESC, id DESC "
        "OFFSET %s LIMIT 1",
        (JOBS // 2,),
    ).fetchone()
    assert row is not None
    after = JobCursor(created_at=row[0], id=row[1])
    for query in (JobQuery(after=after, limit=LIMIT), JobQuery(name="job.7", after=after)):
        assert_reads_a_page(store, conn, query, None)


def test_a_tag_never_scans_the_table(
    filled: tuple[PostgreSQLJobStore, psycopg.Connection[Any]],
) -> None:
    """A tag reads its own jobs (the tag table's key, then each job by id), never the
    whole job table. On failure: the tag is matched in the job row (tags array)."""
    store, conn = filled
    nodes = explain(store, conn, "query_jobs_by_tag", JobQuery(tag="tag-10", limit=LIMIT))
    scans = [
        n["Node Type"]
        for n in nodes
        if n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan")
        and n.get("Relation Name") == "ratchet_job"
    ]
    assert not scans, f"a tag query scans ratchet_job: {scans}"


def test_negative_control_without_the_name_index_the_check_fails(
    filled: tuple[PostgreSQLJobStore, psycopg.Connection[Any]],
) -> None:
    """Dropped (in a transaction rolled back afterwards), a name query walks
    ratchet_job_created past every job of the other names: the check reports it."""
    store, conn = filled
    with conn.transaction(force_rollback=True):
        conn.execute("DROP INDEX ratchet_job_name_created")
        with pytest.raises(AssertionError, match="query_jobs_by_name"):
            assert_reads_a_page(
                store, conn, JobQuery(name="job.7", limit=LIMIT), "ratchet_job_name_created"
            )

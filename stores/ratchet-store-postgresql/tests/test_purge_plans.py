"""The batched purges read their batch through an index, not a scan of the whole table.

Checked by plan shape, never by timing, in a blank database of the store's harness at the
shipped schema holding 20,000 finished jobs (one in nine FAILED), archived too, with
sequential scans priced out (``enable_seqscan = off``): each batch of the archive purge
must come from ``ratchet_job_archive_finished`` and each batch of the dead-letter purge
from the partial ``ratchet_job_dead_letters`` (migration 0004), in index order (no Sort).
The negative control drops an index and shows the check notices.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._statements import STATEMENTS
from ratchet_store_postgresql.harness import PostgreSQLStoreHarness

pytestmark = pytest.mark.server

JOBS = 20_000

# Finished over the last 12 days, most SUCCEEDED: the dead-letter purge's cut-off (an hour
# ago) leaves nearly every one of them older, so reading ratchet_job_finished would walk
# eight other jobs per dead letter.
_FILL_JOBS = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, scheduled_at, created_at,
                         finished_at, updated_at)
SELECT 'purge-' || lpad(n::text, 6, '0'), 'purge', 'tests:noop', '[]', '{}',
       (ARRAY['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED',
              'SUCCEEDED', 'CANCELED', 'FAILED'])[1 + n %% 9],
       2, 3, 'NONE', 0, statement_timestamp(), statement_timestamp(),
       statement_timestamp() - make_interval(secs => 50 * n), statement_timestamp()
FROM generate_series(1, %s) AS n
"""

_ARCHIVE_JOBS = """
INSERT INTO ratchet_job_archive ({columns}, archived_at)
SELECT {columns}, statement_timestamp() FROM ratchet_job
"""

# (statement, table, the index its batch must come from)
PURGES = [
    ("purge_archived_jobs", "ratchet_job_archive", "ratchet_job_archive_finished"),
    ("purge_dead_letters", "ratchet_job", "ratchet_job_dead_letters"),
]


@pytest.fixture(scope="module")
def schema(postgresql_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to a blank database that the store migrated to its shipped schema."""
    harness = PostgreSQLStoreHarness(postgresql_url)
    try:
        with harness.blank_database() as url:
            PostgreSQLJobStore.from_url(url).close()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(_FILL_JOBS, (JOBS,))
                columns = [
                    str(name)
                    for (name,) in conn.execute(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_name = 'ratchet_job_archive' AND column_name <> "
                        "'archived_at' ORDER BY ordinal_position"
                    )
                ]
                conn.execute(_ARCHIVE_JOBS.format(columns=", ".join(columns)))
                conn.execute("ANALYZE ratchet_job, ratchet_job_archive")
                conn.execute("SET enable_seqscan = off")
                yield conn
    finally:
        harness.close()


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def assert_batch_comes_from(
    conn: psycopg.Connection[Any], statement: str, table: str, index: str
) -> None:
    """Every read of ``table`` other than the delete's own look-up by primary key is an
    index scan of ``index``, and nothing is sorted (the index gives the purge order)."""
    params = {"age": 3600.0, "limit": 100}
    row = conn.execute(f"EXPLAIN (FORMAT JSON) {STATEMENTS[statement]}", params).fetchone()
    assert row is not None
    nodes = list(_nodes(row[0][0]["Plan"]))
    reads = [
        node
        for node in nodes
        if node.get("Relation Name") == table
        and node["Node Type"] != "ModifyTable"
        and node.get("Index Name") != f"{table}_pkey"
    ]
    described = [(node["Node Type"], node.get("Index Name")) for node in reads]
    assert reads and all(
        node["Node Type"] in ("Index Scan", "Index Only Scan") and node["Index Name"] == index
        for node in reads
    ), f"{statement} reads {table} as {described}, not through {index}"
    sorts = [node for node in nodes if node["Node Type"] in ("Sort", "Incremental Sort")]
    assert not sorts, f"{statement} sorts its batch: {[node.get('Sort Key') for node in sorts]}"


@pytest.mark.parametrize(("statement", "table", "index"), PURGES)
def test_each_purge_batch_is_a_range_of_its_index(
    schema: psycopg.Connection[Any], statement: str, table: str, index: str
) -> None:
    """On failure: migration 0004 no longer creates the index, or the statement's WHERE /
    ORDER BY no longer matches it (the partial index needs ``status = 'FAILED'``)."""
    assert_batch_comes_from(schema, statement, table, index)


@pytest.mark.parametrize(("statement", "table", "index"), PURGES)
def test_negative_control_without_the_index_the_check_fails(
    schema: psycopg.Connection[Any], statement: str, table: str, index: str
) -> None:
    """Dropped (in a transaction rolled back afterwards), the archive purge falls back to a
    sorted scan and the dead-letter purge to ratchet_job_finished: the check reports it."""
    with schema.transaction(force_rollback=True):
        schema.execute(f"DROP INDEX {index}")
        with pytest.raises(AssertionError, match=statement):
            assert_batch_comes_from(schema, statement, table, index)

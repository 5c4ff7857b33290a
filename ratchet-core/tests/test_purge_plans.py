"""The embedded store's batched purges read their batch through an index, not a scan.

Checked by plan shape (EXPLAIN QUERY PLAN), never by timing, on a database file the store
migrated to its shipped schema, as the store leaves it (no statistics: it never runs
ANALYZE) and analyzed with 20,000 finished jobs (one in nine FAILED), archived too: each batch of the archive purge must be a range of
``ratchet_job_archive_finished`` and each batch of the dead-letter purge one of the partial
``ratchet_job_dead_letters`` (migration 0004), with no temporary B-tree (no sort). The
negative control drops an index and shows the check notices.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import named_statements

# (statement, table, the index its batch must come from)
PURGES = [
    ("purge_archived_jobs", "ratchet_job_archive", "ratchet_job_archive_finished"),
    ("select_dead_letters", "ratchet_job", "ratchet_job_dead_letters"),
]


JOBS = 20_000

# Finished over the last 12 days, most SUCCEEDED.
_FILL_JOBS = """
WITH RECURSIVE numbers (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :jobs)
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, scheduled_at, created_at,
                         finished_at, updated_at)
SELECT printf('purge-%06d', n), 'purge', 'tests:noop', '[]', '{}',
       CASE n % 9 WHEN 7 THEN 'CANCELED' WHEN 8 THEN 'FAILED' ELSE 'SUCCEEDED' END,
       2, 3, 'NONE', 0, :now, :now, :now - 50 * n, :now
FROM numbers
"""


@pytest.fixture(params=["no-statistics", "analyzed"])
def schema(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[sqlite3.Connection]:
    """A connection to a database file at the store's shipped schema: empty and never
    analyzed (as the store leaves it), or filled and analyzed."""
    path = tmp_path / "purges.db"
    SQLiteJobStore(str(path)).close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        if request.param == "analyzed":
            conn.execute(_FILL_JOBS, {"jobs": JOBS, "now": 1_000_000.0})
            columns = [row[1] for row in conn.execute("PRAGMA table_info(ratchet_job_archive)")]
            listed = ", ".join(column for column in columns if column != "archived_at")
            conn.execute(
                f"INSERT INTO ratchet_job_archive ({listed}, archived_at) "
                f"SELECT {listed}, 0 FROM ratchet_job"
            )
            conn.execute("ANALYZE")
        yield conn
    finally:
        conn.close()


def assert_batch_comes_from(
    conn: sqlite3.Connection, statement: str, table: str, index: str
) -> None:
    """Every read of ``table`` but the delete's look-up by id is a SEARCH of ``index`` on
    finished_at, and nothing is sorted in a temporary B-tree."""
    params = {"now": 1_000_000.0, "age": 3600.0, "limit": 100}
    plan = [
        row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {named_statements[statement]}", params)
    ]
    reads = [step for step in plan if f" {table} " in f"{step} " and "(id=?)" not in step]
    assert reads and all(
        step.startswith(f"SEARCH {table} USING ")
        and f"INDEX {index} (" in step
        and "finished_at<?" in step
        for step in reads
    ), f"{statement} reads {table} as {reads}, not through {index}"
    assert not [step for step in plan if "TEMP B-TREE" in step], f"{statement} sorts: {plan}"


@pytest.mark.parametrize(("statement", "table", "index"), PURGES)
def test_each_purge_batch_is_a_range_of_its_index(
    schema: sqlite3.Connection, statement: str, table: str, index: str
) -> None:
    """On failure: migration 0004 no longer creates the index, or the statement's WHERE /
    ORDER BY no longer matches it (the partial index needs ``status = 'FAILED'``)."""
    assert_batch_comes_from(schema, statement, table, index)


@pytest.mark.parametrize(("statement", "table", "index"), PURGES)
def test_negative_control_without_the_index_the_check_fails(
    schema: sqlite3.Connection, statement: str, table: str, index: str
) -> None:
    """Dropped, the archive purge scans and sorts the whole archive and the dead-letter
    purge walks ratchet_job_finished: the check reports it."""
    schema.execute(f"DROP INDEX {index}")
    with pytest.raises(AssertionError, match=statement):
        assert_batch_comes_from(schema, statement, table, index)

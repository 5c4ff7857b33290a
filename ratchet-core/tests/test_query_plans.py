"""The embedded store's job queries read their page through the driving index.

Checked by plan shape (EXPLAIN QUERY PLAN), never by timing, on a database file the store
migrated to its shipped schema, as the store leaves it (no statistics: it never runs
ANALYZE) and analyzed with 20,000 jobs: each common query (no filter, a name, a business
key) must search ``ratchet_job`` through its driving index (migration 0005's for a name
or a business key) with no temporary B-tree for the leading ``created_at`` of the order
(at most one for the id of jobs that share it), and a status query one range of
``ratchet_job_status_created`` per status. The negative control shows that the status
check, were the planner free to take it for an index, reads every job of the statuses
and sorts them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ratchet.spi import JobQuery, JobStatus
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import named_statements

JOBS = 20_000

_FILL_JOBS = """
WITH RECURSIVE numbers (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :jobs)
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, business_key, scheduled_at,
                         created_at, finished_at, updated_at)
SELECT printf('q-%07d', n), 'job.' || (n % 50), 'tests:noop', '[]', '{}',
       CASE n % 10 WHEN 7 THEN 'FAILED' WHEN 8 THEN 'PENDING' WHEN 9 THEN 'CANCELED'
            ELSE 'SUCCEEDED' END,
       2, 3, 'NONE', 0, CASE WHEN n % 10 = 3 THEN 'key-' || (n % 997) END,
       :now, :now - n / 3, :now, :now
FROM numbers
"""

# (statement, query, the index that must drive it)
QUERIES: list[tuple[str, JobQuery, str]] = [
    ("query_jobs", JobQuery(), "ratchet_job_created"),
    ("query_jobs_by_name", JobQuery(name="job.7"), "ratchet_job_name_created"),
    (
        "query_jobs_by_business_key",
        JobQuery(business_key="key-3"),
        "ratchet_job_business_key_created",
    ),
]


@pytest.fixture(params=["no-statistics", "analyzed"])
def schema(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[sqlite3.Connection]:
    """A connection to a database file at the store's shipped schema: empty and never
    analyzed (as the store leaves it), or filled and analyzed."""
    path = tmp_path / "queries.db"
    SQLiteJobStore(str(path)).close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        if request.param == "analyzed":
            conn.execute(_FILL_JOBS, {"jobs": JOBS, "now": 1_000_000.0})
            conn.execute("ANALYZE")
        yield conn
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteJobStore]:
    """A store, only for the parameters its job queries bind."""
    opened = SQLiteJobStore(str(tmp_path / "params.db"))
    yield opened
    opened.close()


def plan_of(
    conn: sqlite3.Connection, store: SQLiteJobStore, text: str, query: JobQuery
) -> list[str]:
    params: dict[str, Any] = store._query_params(query, limit=50, job_id=None)
    return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {text}", params)]


def assert_driven_by(plan: list[str], index: str) -> None:
    """The job table is searched through ``index`` alone, and a temporary B-tree sorts at
    most the right part of the order (the ids of jobs sharing a ``created_at``)."""
    reads = [step for step in plan if " ratchet_job " in f"{step} "]
    assert reads and all(f"USING INDEX {index} (" in step for step in reads), (
        f"ratchet_job is read as {reads}, not through {index}"
    )
    sorts = [step for step in plan if "TEMP B-TREE" in step and "RIGHT PART" not in step]
    assert not sorts, f"every match is sorted: {plan}"


@pytest.mark.parametrize(("statement", "query", "index"), QUERIES)
def test_each_common_query_is_driven_by_its_index(
    schema: sqlite3.Connection,
    store: SQLiteJobStore,
    statement: str,
    query: JobQuery,
    index: str,
) -> None:
    """On failure: migration 0005 no longer creates the index, the statement's WHERE /
    ORDER BY no longer matches it, or the status check lost its ``+`` (the planner then
    reads every job of the statuses through ratchet_job_status_created and sorts them)."""
    assert_driven_by(plan_of(schema, store, named_statements[statement], query), index)


def test_a_status_query_reads_one_range_per_status(
    schema: sqlite3.Connection, store: SQLiteJobStore
) -> None:
    """Each per-status branch searches ratchet_job_status_created on its own status."""
    query = JobQuery(statuses=(JobStatus.FAILED, JobStatus.PENDING))
    plan = plan_of(schema, store, named_statements["query_jobs_by_status"], query)
    reads = [step for step in plan if " ratchet_job " in f"{step} "]
    assert len(reads) == len(JobStatus), plan
    assert all("USING INDEX ratchet_job_status_created (status=?" in step for step in reads)


def test_negative_control_an_indexable_status_check_sorts_every_match(
    tmp_path: Path, store: SQLiteJobStore
) -> None:
    """Without the ``+`` that keeps the status check out of index selection, a database
    as the store leaves it (no statistics) gives the newest jobs from
    ratchet_job_status_created and a sort: the check reports it. (With statistics SQLite
    chooses well either way.)"""
    path = tmp_path / "bare.db"
    SQLiteJobStore(str(path)).close()
    text = named_statements["query_jobs"].replace("+status IN (", "status IN (")
    assert text != named_statements["query_jobs"]
    with sqlite3.connect(path) as conn, pytest.raises(AssertionError):
        assert_driven_by(plan_of(conn, store, text, JobQuery()), "ratchet_job_created")

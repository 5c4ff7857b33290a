"""The claim's cost does not grow with the backlog, and its order is exact on a big one.

Checked by plan shape, never by timing: against 200,000 pending jobs the planner must read
each priority level through the partial index ``ratchet_job_claim`` under a ``Limit``,
never scan the table sequentially, and sort only the merged candidates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._statements import STATEMENTS
from ratchet_tck.store.shared.claim_plans import STARTED_NOW_QUERY, claim_ordered_sixty

pytestmark = pytest.mark.server

BACKLOG = 200_000
BOOST = 900.0

# Waits are whole 15-minute boosts plus 450..546 s: far from any boost boundary, so the
# effective priorities cannot change while the test runs. One job in 1,000 of each level
# waited 7 boosts, the rest 0 to 2: the first 60 span two levels (40 CRITICAL jobs at
# effective 11, then HIGH jobs at 10), so the merge across levels is exercised.
_FILL_BACKLOG = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, scheduled_at, created_at, updated_at)
SELECT 'backlog-' || lpad(n::text, 7, '0'), 'backlog', 'tests:noop', '[]', '{}', 'PENDING',
       n %% 5, 3, 'NONE', 0,
       statement_timestamp() - make_interval(secs => 450 + n %% 97 + 900 * CASE WHEN (n / 5) %% 1000 = 0
                                                               THEN 7 ELSE (n / 5) %% 3 END),
       statement_timestamp(), statement_timestamp()
FROM generate_series(1, %s) AS n
"""

_REFERENCE_ORDER = """
SELECT id FROM ratchet_job
WHERE status = 'PENDING' AND scheduled_at <= statement_timestamp()
ORDER BY priority + floor(extract(epoch FROM statement_timestamp() - scheduled_at) / %s) DESC,
         scheduled_at, id
LIMIT %s
"""


@pytest.fixture(scope="module")
def backlog(postgresql_url: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection to the test database holding 200,000 pending jobs."""
    cleaner = PostgreSQLJobStore.from_url(postgresql_url)
    cleaner.reset_for_tests()
    cleaner.close()
    with psycopg.connect(postgresql_url, autocommit=True) as conn:
        conn.execute(_FILL_BACKLOG, (BACKLOG,))
        conn.execute("ANALYZE ratchet_job")
        yield conn
        conn.execute("TRUNCATE ratchet_job, ratchet_job_tag, ratchet_execution")


def _nodes(plan: dict[str, Any], path: tuple[dict[str, Any], ...] = ()) -> Iterator[Any]:
    """Every plan node with the chain of its ancestors (root first)."""
    yield plan, path
    for child in plan.get("Plans", []):
        yield from _nodes(child, (*path, plan))


def _input(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The nodes whose rows flow into ``plan``: CTE init-plans attached to it are not."""
    yield plan
    for child in plan.get("Plans", []):
        if child.get("Parent Relationship") not in ("InitPlan", "SubPlan"):
            yield from _input(child)


def _claim_plan(
    conn: psycopg.Connection[Any], boost: float, queues: list[str] | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"node_id": "explain", "limit": 50, "boost": boost, "start_now": 10}
    name = "claim_due_jobs"
    if queues is not None:
        name, params["queues"] = "claim_queue_jobs", queues
    row = conn.execute(f"EXPLAIN (FORMAT JSON) {STATEMENTS[name]}", params).fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


# (queues claimed from, the index each level of each queue must be read through)
_CLAIMS = {
    "every-queue": (None, "ratchet_job_claim"),
    "named-queues": (["default", "emails", "reports"], "ratchet_job_queue_claim"),
}


@pytest.mark.parametrize("claim", sorted(_CLAIMS))
@pytest.mark.parametrize("boost", [BOOST, 0.0], ids=["ageing", "plain-priority"])
def test_claim_reads_each_level_through_the_claim_index(
    backlog: psycopg.Connection[Any], boost: float, claim: str
) -> None:
    """Index scans on the claim index (ratchet_job_claim, or ratchet_job_queue_claim for
    named queues), each bounded by a Limit; no Seq Scan but the one read of the paused
    queues (a hashed SubPlan: once per statement); no Sort above a scan of ratchet_job (only
    the merged candidates are sorted); the UPDATE finds its rows by primary key."""
    queues, index = _CLAIMS[claim]
    plan = _claim_plan(backlog, boost, queues)
    nodes = list(_nodes(plan))
    sequential = [n.get("Relation Name") for n, _ in nodes if n["Node Type"] == "Seq Scan"]
    assert set(sequential) <= {"ratchet_paused_queue"}, sequential
    assert len(sequential) <= 1, "the paused queues are read more than once per claim"

    table_scans = [(n, p) for n, p in nodes if n.get("Relation Name") == "ratchet_job"]
    claim_scans = [(n, p) for n, p in table_scans if n.get("Index Name") == index]
    assert claim_scans, f"the claim does not use the index {index}"
    for node, _path in table_scans:
        if node["Node Type"] == "ModifyTable":
            continue
        assert node["Node Type"] in ("Index Scan", "Index Only Scan"), node["Node Type"]
        assert node["Index Name"] in (index, "ratchet_job_pkey"), node
    for node, path in claim_scans:
        ancestors = [a["Node Type"] for a in path]
        assert "Limit" in ancestors, f"an unbounded read of the claim index: {ancestors}"
        nearest_limit = max(i for i, kind in enumerate(ancestors) if kind == "Limit")
        assert "Sort" not in ancestors[nearest_limit:], "the table is sorted before the limit"
        assert "priority" in node["Index Cond"] and "scheduled_at" in node["Index Cond"]

    for node, _ in nodes:
        if node["Node Type"] == "Sort":
            below = [n.get("Relation Name") for n in _input(node)]
            assert "ratchet_job" not in below, "a Sort over rows read from ratchet_job"


def test_claim_order_on_the_backlog_matches_a_full_sort(
    backlog: psycopg.Connection[Any], postgresql_url: str
) -> None:
    """With ageing, the first 60 claimed of 200,000 are exactly the first 60 of a full
    ORDER BY over every pending job, in that order (levels merged correctly), and
    ``start_now=45`` records the start of exactly the first 45 of that order (across the
    level boundary at 40), in the rows as in the returned jobs."""
    expected = [row[0] for row in backlog.execute(_REFERENCE_ORDER, (BOOST, 60))]
    claim_ordered_sixty(lambda: PostgreSQLJobStore.from_url(postgresql_url), expected, boost=BOOST)
    started = backlog.execute(STARTED_NOW_QUERY).fetchall()
    assert sorted(row[0] for row in started) == sorted(expected[:45])

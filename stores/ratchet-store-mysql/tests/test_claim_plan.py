"""The claim's cost does not grow with the backlog, its locks cover only what it claims, and
its order is exact on a big backlog.

Checked by plan shape and lock behaviour, never by timing, against 200,000 pending jobs:
each priority level is one range read of ``ratchet_job_claim`` that the index alone
answers, in index order (no sort of the table); the locking read goes by primary key;
while a claim is open, every other candidate can still be locked and new jobs inserted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
from pymysql.connections import Connection

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql import _sql as sql
from ratchet_store_mysql._claim import CANDIDATES_PER_LEVEL_FACTOR, claim_order, lock_and_claim
from ratchet_store_mysql._pool import connect
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store.shared.claim_plans import STARTED_NOW_QUERY, claim_ordered_sixty

pytestmark = pytest.mark.server

BACKLOG = 200_000
BOOST = 900.0
LIMIT = 50

_DIGITS = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
_NUMBERS = " CROSS JOIN ".join(f"({_DIGITS}) AS {t}" for t in "abcdef")

# Waits are whole 15-minute boosts plus 450..546 s: far from any boost boundary, so the
# effective priorities cannot change while the test runs. One job in 1,000 of each level
# waited 7 boosts, the rest 0 to 2: the first 60 span two levels (40 CRITICAL jobs at
# effective 11, then HIGH jobs at 10), so the merge across levels is exercised.
_FILL_BACKLOG = f"""
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
                         max_retries, backoff, backoff_ms, tags_json, params_json,
                         scheduled_at, created_at, updated_at)
SELECT CONCAT('backlog-', LPAD(n, 7, '0')), 'backlog', 'tests:noop', '[]', '{{}}', 'PENDING',
       n % 5, 3, 'NONE', 0, '[]', '{{}}',
       UTC_TIMESTAMP(6) - INTERVAL (450 + n % 97 + 900 * CASE WHEN (n DIV 5) % 1000 = 0
                                                         THEN 7 ELSE (n DIV 5) % 3 END) SECOND,
       UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d + 100000 * f.d + 1 AS n
      FROM {_NUMBERS}) AS numbers
WHERE n <= {BACKLOG}
"""

_REFERENCE_ORDER = """
SELECT id FROM ratchet_job
WHERE status = 'PENDING' AND scheduled_at <= UTC_TIMESTAMP(6)
ORDER BY priority + FLOOR(TIMESTAMPDIFF(MICROSECOND, scheduled_at, UTC_TIMESTAMP(6))
                          / (%s * 1000000)) DESC,
         scheduled_at, id
LIMIT %s
"""


@pytest.fixture(scope="module")
def backlog(mysql_url: str) -> Iterator[Connection[Any]]:
    """An autocommit connection to the test database holding 200,000 pending jobs."""
    cleaner = MySQLJobStore.from_url(mysql_url)
    cleaner.reset_for_tests()
    cleaner.close()
    conn = connect(parse_store_url(mysql_url))
    try:
        with conn.cursor() as cursor:
            cursor.execute(_FILL_BACKLOG)
            cursor.execute("ANALYZE TABLE ratchet_job")
            cursor.fetchall()
        yield conn
        with conn.cursor() as cursor:
            for table in ("ratchet_execution", "ratchet_job_tag", "ratchet_job"):
                cursor.execute(f"TRUNCATE TABLE {table}")
    finally:
        conn.close()


def _explain(conn: Connection[Any], statement: str, params: Any) -> list[dict[str, Any]]:
    with conn.cursor(pymysql.cursors.DictCursor) as cursor:
        cursor.execute(f"EXPLAIN {statement}", params)
        return list(cursor.fetchall())


def test_candidates_are_one_index_range_per_level(backlog: Connection[Any]) -> None:
    """EXPLAIN of the candidate read: five range reads of ratchet_job_claim on (status,
    priority, scheduled_at), answered by the index alone ("Using index"), never sorted
    ("Using filesort" would mean the whole level is read and sorted before the LIMIT)."""
    plan = _explain(backlog, sql.STATEMENTS["claim_candidates"], {"per_level": 2 * LIMIT})
    reads = [row for row in plan if row["table"] == "ratchet_job"]
    assert len(reads) == 5, plan
    for row in reads:
        assert (row["type"], row["key"]) == ("range", "ratchet_job_claim"), row
        assert "Using index" in row["Extra"], row
    assert not [row for row in plan if "filesort" in (row["Extra"] or "")], plan


def test_the_locking_read_goes_by_primary_key(backlog: Connection[Any]) -> None:
    """EXPLAIN of the locking read: point ranges on PRIMARY (record locks only, no gaps)."""
    ids = [f"backlog-{n:07d}" for n in range(1, LIMIT + 1)]
    statement = sql.statement("lock_candidates", ids=sql.placeholders(len(ids)))
    plan = _explain(backlog, statement, [*ids, "2100-01-01"])
    [row] = [row for row in plan if row["table"] == "ratchet_job"]
    assert (row["table"], row["type"], row["key"]) == ("ratchet_job", "range", "PRIMARY"), row


def test_candidates_of_named_queues_are_one_index_range_per_queue_and_level(
    backlog: Connection[Any],
) -> None:
    """The candidates of a claim from three named queues: fifteen range reads of
    ratchet_job_queue_claim on (status, queue, priority, scheduled_at), answered by the
    index alone, none of them sorted. The one sort is the merge of their rows (at most
    fifteen times the LIMIT, in the derived table), never a read of the backlog."""
    params = {
        "per_level": 2 * LIMIT,
        "boost_us": 60_000_000,
        "q0": "default",
        "q1": "emails",
        "q2": "reports",
    }
    plan = _explain(backlog, sql.queue_candidates(3), params)
    reads = [row for row in plan if row["table"] == "ratchet_job"]
    assert len(reads) == 15, plan
    for row in reads:
        assert (row["type"], row["key"]) == ("range", "ratchet_job_queue_claim"), row
        assert "Using index" in row["Extra"], row
        assert "filesort" not in row["Extra"], row
    sorted_reads = [row for row in plan if "filesort" in (row["Extra"] or "")]
    assert [row["table"] for row in sorted_reads] == ["<derived2>"], plan


def test_each_level_reads_only_its_candidates(backlog: Connection[Any]) -> None:
    """MariaDB's ANALYZE runs the candidate read and reports the rows each level actually
    read (r_rows): never more than its LIMIT, out of 40,000 pending jobs per level."""
    with backlog.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        version = str(cursor.fetchone()[0])  # type: ignore[index]
        if "MariaDB" not in version:
            pytest.skip(f"ANALYZE FORMAT=JSON is MariaDB's; server is {version}")
        per_level = CANDIDATES_PER_LEVEL_FACTOR * LIMIT
        candidates = sql.STATEMENTS["claim_candidates"]
        cursor.execute(f"ANALYZE FORMAT=JSON {candidates}", {"per_level": per_level})
        report = json.loads(cursor.fetchone()[0])  # type: ignore[index]

    def tables(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            if node.get("table_name") == "ratchet_job":
                yield node
            for value in node.values():
                yield from tables(value)
        elif isinstance(node, list):
            for value in node:
                yield from tables(value)

    read = [table["r_rows"] for table in tables(report)]
    assert read == [per_level] * 5, read


@pytest.mark.parametrize("isolation", ["read-committed", "repeatable-read"])
def test_an_open_claim_locks_only_the_jobs_it_took(
    backlog: Connection[Any], mysql_url: str, isolation: str
) -> None:
    """While a claim of 10 is open (not committed): those 10 cannot be locked by another
    session, every other candidate can, and new jobs placed right next to the taken ones
    in the claim index go in without waiting: no gap locks, also under REPEATABLE READ."""
    claimer = connect(parse_store_url(f"{mysql_url}?isolation_level={isolation}"))
    other = connect(parse_store_url(f"{mysql_url}?isolation_level={isolation}"))
    try:
        with claimer.cursor() as cursor:
            cursor.execute(sql.STATEMENTS["claim_candidates"], {"per_level": 2 * LIMIT})
            candidates = cursor.fetchall()
        now = candidates[0][3]
        order = claim_order(candidates, now, BOOST)
        claimer.begin()
        taken = lock_and_claim(claimer, order, now=now, node_id="open", limit=10)
        taken_ids = {job.id for job in taken}
        rest = [job_id.decode() for job_id in order if job_id.decode() not in taken_ids]
        assert len(taken) == 10 and len(rest) == 5 * 2 * LIMIT - 10
        with other.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
            other.begin()
            marks = sql.placeholders(len(rest))
            cursor.execute(
                f"SELECT id FROM ratchet_job WHERE id IN ({marks}) FOR UPDATE NOWAIT", rest
            )
            assert len(cursor.fetchall()) == len(rest)
            # Right before each taken job in the claim index: the gap a next-key lock on it
            # would cover.
            for job in taken:
                cursor.execute(
                    "INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, "
                    "priority, max_retries, backoff, backoff_ms, tags_json, params_json, "
                    "scheduled_at, created_at, updated_at) VALUES (%s, 'n', 't', '[]', '{}', "
                    "'PENDING', %s, 0, 'NONE', 0, '[]', '{}', %s, %s, %s)",
                    (job.id[:-1], job.priority, job.scheduled_at.replace(tzinfo=None), now, now),
                )
            for job_id in taken_ids:
                with pytest.raises(pymysql.err.OperationalError):
                    cursor.execute(
                        "SELECT id FROM ratchet_job WHERE id = %s FOR UPDATE NOWAIT", (job_id,)
                    )
            other.rollback()
    finally:
        claimer.rollback()
        claimer.close()
        other.close()


def test_claim_order_on_the_backlog_matches_a_full_sort(
    backlog: Connection[Any], mysql_url: str
) -> None:
    """With ageing, the first 60 claimed of 200,000 are exactly the first 60 of a full
    ORDER BY over every pending job, in that order (levels merged correctly), and
    ``start_now=45`` records the start of exactly the first 45 of that order (across the
    level boundary at 40), in the rows as in the returned jobs."""
    with backlog.cursor() as cursor:
        cursor.execute(_REFERENCE_ORDER, (BOOST, 60))
        expected = [row[0].decode() for row in cursor.fetchall()]
    claim_ordered_sixty(lambda: MySQLJobStore.from_url(mysql_url), expected, boost=BOOST)
    with backlog.cursor() as cursor:
        cursor.execute(STARTED_NOW_QUERY)
        started = sorted(row[0].decode() for row in cursor.fetchall())
    assert started == sorted(expected[:45])


def test_negative_control_a_locking_range_read_blocks_enqueues(
    backlog: Connection[Any], mysql_url: str
) -> None:
    """Why the claim locks by primary key: the obvious locking read, a range of the claim
    index FOR UPDATE SKIP LOCKED, takes next-key locks under REPEATABLE READ, and a job
    enqueued next to a locked candidate then waits (here: times out) until the claim ends.
    If this ever stops blocking, the server no longer gap-locks that read."""
    url = f"{mysql_url}?isolation_level=repeatable-read"
    claimer, other = connect(parse_store_url(url)), connect(parse_store_url(url))
    try:
        claimer.begin()
        with claimer.cursor() as cursor:
            cursor.execute(
                "SELECT id, scheduled_at FROM ratchet_job FORCE INDEX (ratchet_job_claim) "
                "WHERE status = 'PENDING' AND priority = 4 AND scheduled_at <= UTC_TIMESTAMP(6) "
                "ORDER BY scheduled_at, id LIMIT 3 FOR UPDATE SKIP LOCKED"
            )
            [_first, (job_id, scheduled_at), _third] = cursor.fetchall()
        with other.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
            with pytest.raises(pymysql.err.OperationalError) as info:
                cursor.execute(
                    "INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, "
                    "priority, max_retries, backoff, backoff_ms, tags_json, params_json, "
                    "scheduled_at, created_at, updated_at) VALUES (%s, 'n', 't', '[]', '{}', "
                    "'PENDING', 4, 0, 'NONE', 0, '[]', '{}', %s, %s, %s)",
                    (job_id[:-1], scheduled_at, scheduled_at, scheduled_at),
                )
            assert info.value.args[0] == 1205  # lock wait timeout
    finally:
        claimer.rollback()
        claimer.close()
        other.close()

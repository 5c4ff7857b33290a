"""The store's SQL: ``queries.sql`` loaded with its generated pieces, the pieces the tuned
paths build per call, and the session the shared layer runs statements on.

Everything static is in ``queries.sql`` (its header states the conventions: server clock,
microsecond durations, matched-row counts). What depends on the code or on the call is
built here and nowhere else:

* when the file is loaded, ``{{job_columns}}``, ``{{due_candidates}}`` and
  ``{{due_candidates_with_queue}}`` (one ordered scan of the claim index per priority
  level, for :mod:`ratchet_store_mysql._claim`);
* per call, by the tuned paths: ``{ids}`` lists and the multi-row ``{rows}`` of a VALUES
  list (:func:`placeholders` with a row form below), the ``{cases}`` and ``{pairs}`` of a
  batch completion, the ``{started}`` form of a claim. Only placeholders and these fixed
  forms are ever spliced in; every value travels as a parameter.
"""

from __future__ import annotations

import functools
from typing import Any

from pymysql.cursors import Cursor

from ratchet.spi import JobPriority
from ratchet.spi.sql import Params, Row, SQLSession, Statements, due_in_queues, job_query_fragments

__all__ = [
    "EXECUTION_KEY",
    "EXECUTION_ROW",
    "FRAGMENTS",
    "IDEMPOTENCY_KEY_ROW",
    "JOB_ROW",
    "RESULT_CASE",
    "STARTED_ALL",
    "STARTED_NONE",
    "STARTED_SOME",
    "STATEMENTS",
    "TAG_ROW",
    "MySQLSession",
    "placeholders",
    "queue_candidates",
    "statement",
]

JOB_COLUMNS = (
    "id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries, "
    "backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at, "
    "business_key, idempotency_key, tags_json, params_json, recurring_id, result_json, "
    "result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at, "
    "queue, depends_on, signal_key, signal_timeout_seconds, signal_json, signal_delivered_at, "
    "branch_json, batch_id, batch_total"
)


# Every claim passes over the paused queues (SupportsQueues).
NOT_PAUSED = "AND queue NOT IN (SELECT queue FROM ratchet_paused_queue)"


def _due_at_level(priority: int, extra: str = "") -> str:
    # At most %(per_level)s entries of the index ratchet_job_claim, which holds every
    # selected column and the queue: no table row is read.
    return (
        f"(SELECT priority, scheduled_at, id, UTC_TIMESTAMP(6) AS now{extra} "
        "FROM ratchet_job FORCE INDEX (ratchet_job_claim) "
        f"WHERE status = 'PENDING' AND priority = {priority} "
        f"AND scheduled_at <= UTC_TIMESTAMP(6) {NOT_PAUSED} "
        "ORDER BY scheduled_at, id LIMIT %(per_level)s)"
    )


def _due_in_queue_at_level(queue: str, priority: int) -> str:
    # The same for one named queue, from the index ratchet_job_queue_claim. No paused
    # filter here: the claim leaves the paused queues out of the names it passes (a
    # subquery per branch made a claim from 20 queues cost twice a plain one), and the
    # locking read checks again.
    return (
        "(SELECT priority, scheduled_at, id, UTC_TIMESTAMP(6) AS now "
        "FROM ratchet_job FORCE INDEX (ratchet_job_queue_claim) "
        f"WHERE status = 'PENDING' AND queue = %({queue})s AND priority = {priority} "
        "AND scheduled_at <= UTC_TIMESTAMP(6) "
        "ORDER BY scheduled_at, id LIMIT %(per_level)s)"
    )


@functools.lru_cache(maxsize=64)
def queue_candidates(count: int) -> str:
    """Step 1 of a claim from ``count`` named queues (parameters ``q0`` ...), none of
    them paused: each queue's and level's first %(per_level)s, merged by the server into
    the first %(per_level)s in claim order (%(boost_us)s: the boost in whole
    microseconds; a huge one is plain priority), so five branches per queue do not send
    five times the rows. The same integer order as ``_claim.claim_order``."""
    branches = due_in_queues(count, _due_in_queue_at_level)
    return (
        f"SELECT priority, scheduled_at, id, now FROM ({branches}) "
        "AS candidate ORDER BY priority + TIMESTAMPDIFF(MICROSECOND, scheduled_at, now) "
        "DIV %(boost_us)s DESC, scheduled_at, id LIMIT %(per_level)s"
    )


FRAGMENTS = {
    "job_columns": JOB_COLUMNS,
    "due_candidates": " UNION ALL ".join(
        _due_at_level(int(level)) for level in sorted(JobPriority, reverse=True)
    ),
    "due_candidates_with_queue": " UNION ALL ".join(
        _due_at_level(int(level), ", queue") for level in sorted(JobPriority, reverse=True)
    ),
    **job_query_fragments(lambda name: f"%({name})s", columns=JOB_COLUMNS),
}
"""The ``{{name}}`` pieces of queries.sql, filled when it is loaded."""

STATEMENTS = Statements.load("ratchet_store_mysql", "queries.sql", fragments=FRAGMENTS)


def statement(name: str, **pieces: str) -> str:
    """The statement ``name`` with its run-time markers (``{ids}``, ``{rows}``, ...) filled
    with ``pieces``: placeholders and the fixed forms below only."""
    return STATEMENTS[name].format(**pieces)


def placeholders(count: int, row: str = "%s") -> str:
    """``count`` copies of ``row`` joined by commas: the shape of an IN list or VALUES."""
    return ", ".join([row] * count)


# The VALUES rows of insert_jobs, insert_idempotency_keys, insert_tags and open_executions.
# JOB_ROW takes RowEncoder.new_job's values in their order (see _enqueue.JOB_PARAMETERS).
JOB_ROW = (
    "(%s, %s, %s, %s, %s, %s, %s, 0, %s, %s, %s, %s, 0, 0, NULL, NULL, %s, %s, %s, %s, "
    "%s, NULL, NULL, NULL, COALESCE(%s, UTC_TIMESTAMP(6) + INTERVAL %s MICROSECOND), "
    "UTC_TIMESTAMP(6), NULL, NULL, UTC_TIMESTAMP(6), %s, %s, %s, %s, NULL, NULL, %s, %s, %s)"
)
IDEMPOTENCY_KEY_ROW = "(%s, %s, UTC_TIMESTAMP(6))"
TAG_ROW = "(%s, %s)"
EXECUTION_ROW = "(%s, %s, %s, %s, 'RUNNING', NULL, %s, NULL)"

# The {started} of claim_locked: every job started at once, none, or the first few.
STARTED_ALL = "claim_seq + 1"
STARTED_NONE = "started_seq"
STARTED_SOME = "CASE WHEN id IN ({ids}) THEN claim_seq + 1 ELSE started_seq END"

# The {cases} of complete_locked (job id, value) and the {pairs} of close_executions.
RESULT_CASE = "WHEN %s THEN %s"
EXECUTION_KEY = "(job_id = %s AND claim_seq = %s)"


def _named(name: str) -> str:
    return f"%({name})s"


class MySQLSession(SQLSession):
    """The shared layer's statements on a cursor inside one open transaction."""

    def __init__(self, cursor: Cursor) -> None:
        super().__init__(STATEMENTS, _named)
        self.cursor = cursor

    def execute_text(self, text: str, params: Params) -> int:
        """Matched rows (CLIENT.FOUND_ROWS), not changed ones."""
        return int(self.cursor.execute(text, _args(params)))

    def query_text(self, text: str, params: Params) -> list[Row]:
        self.cursor.execute(text, _args(params))
        return list(self.cursor.fetchall())


def _args(params: Params) -> Any:
    # Without parameters the driver sends the text as written (no %-formatting of it).
    return params or None

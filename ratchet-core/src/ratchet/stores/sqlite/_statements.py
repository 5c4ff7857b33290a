"""The embedded store's statements (``queries.sql``), with the pieces made in Python.

Generated here, in one place: the column lists the decoders read in order
(:mod:`ratchet.spi.RowDecoder`), SQLite's clock as an expression, and the per-priority
union of due jobs a claim merges (of every queue, or of the queues a worker names).
"""

from __future__ import annotations

import functools

from ratchet._types import JobPriority
from ratchet.spi.sql import Statements, job_query_fragments
from ratchet.spi.sql import due_in_queues as shared_due_in_queues

__all__ = [
    "JOB_COLUMNS",
    "NOW",
    "RECURRING_COLUMNS",
    "STATEMENTS",
    "TEST_CLOCK_FUNCTION",
    "due_in_queues",
    "statements_on_test_clock",
]

NOW = "(julianday('now') - 2440587.5) * 86400.0"
"""SQLite's clock in epoch seconds."""

TEST_CLOCK_FUNCTION = "ratchet_test_clock"
"""The SQL function a store on a test clock reads instead of :data:`NOW` (registered on
its connection by ``SQLiteJobStore.use_test_clock``)."""

JOB_COLUMNS = (
    "id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries, "
    "backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at, "
    "business_key, idempotency_key, tags_json, params_json, recurring_id, result_json, "
    "result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at, "
    "queue, depends_on, signal_key, signal_timeout_seconds, signal_json, signal_delivered_at, "
    "branch_json, batch_id, batch_total"
)

RECURRING_COLUMNS = (
    "id, cron, zone, misfire, name, target, args_json, kwargs_json, priority, max_retries, "
    "backoff, backoff_ms, timeout_seconds, tags_json, source, created_at, paused"
)


# Every claim leaves out the paused queues (SupportsQueues).
_NOT_PAUSED = "AND queue NOT IN (SELECT queue FROM ratchet_paused_queue)"


def _due_at_level(priority: int) -> str:
    # One ordered range scan of the claim index per priority level, at most :limit rows.
    return (
        "SELECT * FROM (SELECT id, priority, scheduled_at FROM ratchet_job "
        f"WHERE status = 'PENDING' AND priority = {priority} AND scheduled_at <= :now "
        f"{_NOT_PAUSED} ORDER BY scheduled_at, id LIMIT :limit)"
    )


def _due_in_queue_at_level(queue: str, priority: int) -> str:
    # One ordered range scan of ratchet_job_queue_claim per queue and level.
    return (
        "SELECT * FROM (SELECT id, priority, scheduled_at FROM ratchet_job "
        "INDEXED BY ratchet_job_queue_claim "
        f"WHERE status = 'PENDING' AND queue = :{queue} AND priority = {priority} "
        f"AND scheduled_at <= :now {_NOT_PAUSED} ORDER BY scheduled_at, id LIMIT :limit)"
    )


@functools.lru_cache(maxsize=64)
def due_in_queues(count: int) -> str:
    """The ``{due}`` of ``claim_queue_candidates_*`` for ``count`` queues (``:q0`` ...)."""
    return shared_due_in_queues(count, _due_in_queue_at_level)


def _load(now: str) -> Statements:
    return Statements.load(
        "ratchet.stores.sqlite",
        "queries.sql",
        fragments={
            "now": now,
            "job_columns": JOB_COLUMNS,
            "recurring_columns": RECURRING_COLUMNS,
            "due_candidates": " UNION ALL ".join(_due_at_level(int(p)) for p in JobPriority),
            **job_query_fragments(
                lambda name: f":{name}", columns=JOB_COLUMNS, checked_status="+status"
            ),
        },
    )


STATEMENTS = _load(NOW)

_on_test_clock: list[Statements] = []  # loaded on first use: production never pays for it


def statements_on_test_clock() -> Statements:
    """:data:`STATEMENTS` with every reading of the clock calling
    :data:`TEST_CLOCK_FUNCTION` instead: the same texts otherwise, so every statement of a
    store on a test clock reads that one clock (``ratchet.testing``)."""
    if not _on_test_clock:
        _on_test_clock.append(_load(f"{TEST_CLOCK_FUNCTION}()"))
    return _on_test_clock[0]

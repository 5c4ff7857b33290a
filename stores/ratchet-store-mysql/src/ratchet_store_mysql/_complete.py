"""A batch of successes (``complete_jobs``) in one transaction of three statements.

1. ``lock_running``: lock the batch's RUNNING rows in id order (two overlapping batches
   cannot deadlock) and read the database time once;
2. ``complete_locked``: update the rows whose ``claim_seq`` matched, each with its own
   result (``CASE id WHEN ...``);
3. ``close_executions``: close their execution records, stamped with that same time.

The locks make the update's match exact: every locked, matching row must be updated, and
a count that differs rolls the batch back.
"""

from __future__ import annotations

from collections.abc import Sequence

from pymysql.cursors import Cursor

from ratchet.spi import Completion
from ratchet_store_mysql._rows import text
from ratchet_store_mysql._sql import EXECUTION_KEY, RESULT_CASE, placeholders, statement

__all__ = ["complete_locked"]


def complete_locked(cursor: Cursor, completions: Sequence[Completion]) -> set[str]:
    """Record ``completions`` (distinct job ids) inside the transaction open on ``cursor``
    (the caller commits); the ids recorded."""
    ids = sorted(c.job_id for c in completions)
    cursor.execute(statement("lock_running", ids=placeholders(len(ids))), ids)
    rows = cursor.fetchall()
    current = {text(row[0]): int(row[1]) for row in rows}
    matched = [c for c in completions if current.get(c.job_id) == c.claim_seq]
    if not matched:
        return set()
    now = rows[0][2]
    cases = " ".join([RESULT_CASE] * len(matched))
    cursor.execute(
        statement("complete_locked", cases=cases, ids=placeholders(len(matched))),
        [
            *(v for c in matched for v in (c.job_id, c.result_json)),
            *(v for c in matched for v in (c.job_id, c.result_type)),
            now,
            now,
            *(c.job_id for c in matched),
        ],
    )
    # CLIENT.FOUND_ROWS: rows matched; every locked, matching row must be updated.
    if cursor.rowcount != len(matched):
        raise AssertionError(
            f"completed {cursor.rowcount} of {len(matched)} locked jobs; the "
            "transaction is rolled back"
        )
    pairs = " OR ".join([EXECUTION_KEY] * len(matched))
    cursor.execute(
        statement("close_executions", pairs=pairs),
        [now, *(v for c in matched for v in (c.job_id, c.claim_seq))],
    )
    # The chain steps waiting for these successes become due (SupportsChains).
    done = [c.job_id for c in matched]
    cursor.execute(
        statement("release_dependents_of", ids=placeholders(len(done))), [now, now, *done]
    )
    return set(done)

"""The claim: find due jobs through the claim index, lock exactly those it takes, flip them.

1. **Candidates** (one autocommit statement, no locks): for each priority level, the first
   ``CANDIDATES_PER_LEVEL_FACTOR * limit`` due PENDING jobs in (scheduled_at, id) order,
   read from the index ``ratchet_job_claim (status, priority, scheduled_at, id)`` alone,
   with the database time. An idle poll ends here: one round trip, no transaction.
2. **Order**: the candidates are ranked in exact claim order (effective priority
   ``priority + floor(wait / boost)`` descending, then scheduled_at, then id). Within one
   level effective priority never rises as scheduled_at grows, so the first ``limit`` jobs
   overall are among each level's first ``limit``: the cost never depends on the backlog.
3. **Lock** (a short transaction): ``SELECT ... WHERE id IN (the next candidates in claim
   order) AND status = 'PENDING' AND scheduled_at <= now FOR UPDATE SKIP LOCKED``. Rows
   that another claimer holds are skipped, rows that stopped being due or PENDING are not
   returned, and the next candidates are tried (a few rounds at most), so the locking read
   only ever locks rows this claim takes. Primary-key point locks take no gap locks, even
   under REPEATABLE READ: claimers never block enqueuers or each other.
Named queues: step 1 reads each queue's levels from ``ratchet_job_queue_claim``, five
ordered scans per queue, which MariaDB runs at about 0.07 ms each (a claim from 20 queues
cost 8.6 ms against 1.3 ms for every queue). A claim from :data:`SHORTCUT_MIN_QUEUES` or
more queues therefore first reads every queue's candidates with their queue and keeps its
own (:func:`among_every_queue`); that is exact whenever each level either ran out or
already holds enough of them, and otherwise the per-queue read follows (and the shortcut
rests for :data:`SHORTCUT_REST_CLAIMS` claims, so a worker whose queues are a sliver of
the backlog does not pay both reads every time).
4. **Claim**, same transaction: one UPDATE (RUNNING, owner, claimed_at = the time of step
   1, ``claim_seq + 1``; for the first ``start_now`` of the locked jobs in claim order,
   the ones the worker starts at once, also ``started_seq`` = the new ``claim_seq``) and
   one INSERT opening the execution records; commit. The jobs are returned in claim order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pymysql.connections import Connection
from pymysql.cursors import Cursor

from ratchet.spi import ClaimedJob
from ratchet.spi.sql import queue_params
from ratchet_store_mysql import _rows
from ratchet_store_mysql._pool import rollback_quietly
from ratchet_store_mysql._rows import claimed_job
from ratchet_store_mysql._sql import (
    EXECUTION_ROW,
    STARTED_ALL,
    STARTED_NONE,
    STARTED_SOME,
    STATEMENTS,
    placeholders,
    queue_candidates,
    statement,
)

__all__ = [
    "CANDIDATES_PER_LEVEL_FACTOR",
    "LOCK_ROUNDS",
    "SHORTCUT_MIN_QUEUES",
    "SHORTCUT_REST_CLAIMS",
    "EveryQueueShortcut",
    "among_every_queue",
    "claim_due_jobs",
    "claim_order",
    "lock_and_claim",
]

CANDIDATES_PER_LEVEL_FACTOR = 2
"""Candidates read per level, as a multiple of the limit: the spare ones replace rows that
concurrent claimers hold, so a claim under contention still fills its batch."""

LOCK_ROUNDS = 3
"""Most locking reads per claim (each tries as many further candidates as are missing)."""


SHORTCUT_MIN_QUEUES = 4
"""From how many named queues a claim first tries every queue's candidates (below, the
per-queue read costs about what the shortcut does)."""

SHORTCUT_REST_CLAIMS = 20
"""How many claims from named queues skip the shortcut after it did not decide one."""


class EveryQueueShortcut:
    """Whether a claim from named queues tries every queue's candidates first; one per
    store instance. Unlocked: a lost update only moves the next try by a claim."""

    def __init__(self) -> None:
        self._resting = 0

    def worth_trying(self, queue_count: int) -> bool:
        if queue_count < SHORTCUT_MIN_QUEUES:
            return False
        if self._resting > 0:
            self._resting -= 1
            return False
        return True

    def missed(self) -> None:
        self._resting = SHORTCUT_REST_CLAIMS


def among_every_queue(
    rows: Sequence[Sequence[Any]], queues: Sequence[str], per_level: int
) -> list[Sequence[Any]] | None:
    """The candidates of a claim from ``queues`` out of every queue's (``rows`` of
    ``claim_candidates_with_queue``: priority, scheduled_at, id, now, queue; at most
    ``per_level`` per level, paused queues left out), or ``None`` when they cannot be
    known from these rows.

    Exact per level when the level ran out (fewer than ``per_level`` rows: every due job
    of it was read) or holds at least ``per_level`` of these queues' jobs (any of theirs
    earlier in the level's order would have been read before them): then these are the
    level's first jobs of ``queues`` that the per-queue read returns, with as many spare.
    """
    wanted = set(queues)
    read: dict[int, int] = {}
    mine: dict[int, list[Sequence[Any]]] = {}
    for row in rows:
        level = int(row[0])
        read[level] = read.get(level, 0) + 1
        if _rows.text(row[4]) in wanted:
            mine.setdefault(level, []).append(row)
    for level, count in read.items():
        if count >= per_level and len(mine.get(level, ())) < per_level:
            return None  # more of this level's jobs may be these queues' than were read
    return [row for level_rows in mine.values() for row in level_rows]


_MICROSECOND = timedelta(microseconds=1)
_NO_BOOST_US = 2**62  # larger than any wait in microseconds: the boost adds 0


def boost_microseconds(boost_seconds: float) -> int | None:
    """The boost in whole microseconds (at least 1), or ``None`` when ageing is off."""
    if boost_seconds <= 0:
        return None
    return max(1, round(boost_seconds * 1_000_000))


def claim_order(
    candidates: Sequence[Sequence[Any]], now: datetime, boost_seconds: float
) -> list[bytes]:
    """Ids of ``(priority, scheduled_at, id, …)`` candidates in exact claim order at
    ``now``: effective priority descending, then scheduled_at, then id (bytewise, as the
    database orders VARBINARY). A boost of 0 or less disables ageing."""

    boost = boost_microseconds(boost_seconds)

    def key(row: Sequence[Any]) -> tuple[int, datetime, bytes]:
        priority, scheduled_at, job_id = int(row[0]), row[1], bytes(row[2])
        if boost is not None:
            # Whole microseconds (the column's precision), so the order agrees exactly
            # with the server's (queue_candidates orders by the same integers).
            priority += ((now - scheduled_at) // _MICROSECOND) // boost
        return (-priority, scheduled_at, job_id)

    return [key(row)[2] for row in sorted(candidates, key=key)]


def lock_and_claim(
    conn: Connection[Any],
    order: Sequence[bytes],
    *,
    now: datetime,
    node_id: str,
    limit: int,
    start_now: int | None = None,
) -> list[ClaimedJob]:
    """Steps 3 and 4 inside the transaction open on ``conn`` (the caller commits).

    The first ``start_now`` jobs claimed (``None``: all) have their start recorded."""
    chosen: list[Sequence[Any]] = []
    tried = 0
    with conn.cursor() as cursor:
        for _ in range(LOCK_ROUNDS):
            batch = list(order[tried : tried + limit - len(chosen)])
            if not batch:
                break
            tried += len(batch)
            cursor.execute(
                statement("lock_candidates", ids=placeholders(len(batch))), [*batch, now]
            )
            locked = {bytes(row[0]): row for row in cursor.fetchall()}
            chosen += [locked[job_id] for job_id in batch if job_id in locked]
            if len(chosen) >= limit:
                break
        if not chosen:
            return []
        ids = [row[0] for row in chosen]
        # Chosen rows are in claim order: the first ``starting`` are started at once.
        starting = len(ids) if start_now is None else max(0, min(start_now, len(ids)))
        marked: list[Any] = []
        if starting == len(ids):
            assign = STARTED_ALL
        elif starting == 0:
            assign = STARTED_NONE
        else:
            assign, marked = STARTED_SOME.format(ids=placeholders(starting)), ids[:starting]
        cursor.execute(
            statement("claim_locked", started=assign, ids=placeholders(len(ids))),
            [node_id, now, now, *marked, now, *ids],
        )
        # CLIENT.FOUND_ROWS: the count is rows matched, and every locked row must match.
        if cursor.rowcount != len(ids):
            raise AssertionError(
                f"claimed {cursor.rowcount} of {len(ids)} locked jobs; the transaction is "
                "rolled back"
            )
        jobs = [
            claimed_job(row, claimed_at=now, start_recorded=index < starting)
            for index, row in enumerate(chosen)
        ]
        opened = [
            value for job in jobs for value in (job.id, job.claim_seq, job.attempt, node_id, now)
        ]
        cursor.execute(
            statement("open_executions", rows=placeholders(len(jobs), EXECUTION_ROW)), opened
        )
    return jobs


def _queue_candidates(
    cursor: Cursor,
    queues: Sequence[str],
    per_level: dict[str, Any],
    boost_seconds: float,
    shortcut: EveryQueueShortcut | None,
) -> list[Sequence[Any]]:
    """Step 1 of a claim from ``queues`` (none paused): through ``shortcut`` when it
    decides, else each queue's and level's scan, merged by the server."""
    if shortcut is not None and shortcut.worth_trying(len(queues)):
        cursor.execute(STATEMENTS["claim_candidates_with_queue"], per_level)
        found = among_every_queue(cursor.fetchall(), queues, per_level["per_level"])
        if found is not None:
            return found
        shortcut.missed()
    boost = boost_microseconds(boost_seconds)
    params = {
        **per_level,
        **queue_params(queues),
        "boost_us": _NO_BOOST_US if boost is None else boost,
    }
    cursor.execute(queue_candidates(len(queues)), params)
    return list(cursor.fetchall())


def claim_due_jobs(
    conn: Connection[Any],
    *,
    node_id: str,
    limit: int,
    boost_seconds: float,
    start_now: int | None = None,
    queues: Sequence[str] | None = None,
    shortcut: EveryQueueShortcut | None = None,
) -> list[ClaimedJob]:
    """The whole claim on ``conn`` (an idle autocommit connection); see the module doc.
    With ``queues``, the paused ones are left out first (one read of
    ``ratchet_paused_queue``) and step 1 reads each other one's levels from the index
    ``ratchet_job_queue_claim (status, queue, priority, scheduled_at, id)`` instead,
    unless ``shortcut`` finds them among every queue's candidates; the locking read
    leaves out the paused queues again, so a pause that commits between the two steps
    still holds."""
    per_level: dict[str, Any] = {"per_level": CANDIDATES_PER_LEVEL_FACTOR * limit}
    with conn.cursor() as cursor:
        if queues is None:
            cursor.execute(STATEMENTS["claim_candidates"], per_level)
            candidates = list(cursor.fetchall())
        else:
            cursor.execute(STATEMENTS["select_paused_queues"])
            paused = {_rows.text(row[0]) for row in cursor.fetchall()}
            queues = [name for name in queues if name not in paused]
            if not queues:
                return []
            candidates = _queue_candidates(cursor, queues, per_level, boost_seconds, shortcut)
    if not candidates:
        return []
    now: datetime = candidates[0][3]
    order = claim_order(candidates, now, boost_seconds)
    conn.begin()
    try:
        jobs = lock_and_claim(
            conn, order, now=now, node_id=node_id, limit=limit, start_now=start_now
        )
        conn.commit()
    except BaseException:
        rollback_quietly(conn)
        raise
    return jobs

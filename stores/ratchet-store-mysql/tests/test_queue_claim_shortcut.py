"""The claim from many named queues tries every queue's candidates first
(``_claim.among_every_queue``): where it decides, it picks the candidates the per-queue
read picks; where it cannot know (another queue's older backlog fills a level), it says
so and the per-queue read runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql import _sql as sql
from ratchet_store_mysql._claim import (
    SHORTCUT_MIN_QUEUES,
    SHORTCUT_REST_CLAIMS,
    EveryQueueShortcut,
    among_every_queue,
    claim_order,
)
from ratchet_store_mysql._pool import connect
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

QUEUES = [f"q{index}" for index in range(5)]
LIMIT = 10
PER_LEVEL = 2 * LIMIT  # CANDIDATES_PER_LEVEL_FACTOR * LIMIT


@pytest.fixture
def conn(mysql_url: str) -> Iterator[Any]:
    opened = connect(parse_store_url(mysql_url))
    try:
        yield opened
    finally:
        opened.close()


def _every_queue(conn: Any) -> list[Any]:
    with conn.cursor() as cursor:
        cursor.execute(sql.STATEMENTS["claim_candidates_with_queue"], {"per_level": PER_LEVEL})
        return list(cursor.fetchall())


def _per_queue(conn: Any, queues: list[str]) -> list[Any]:
    params: dict[str, Any] = {"per_level": PER_LEVEL, "boost_us": 2**62}
    params |= {f"q{index}": name for index, name in enumerate(queues)}
    with conn.cursor() as cursor:
        cursor.execute(sql.queue_candidates(len(queues)), params)
        return list(cursor.fetchall())


def _first(rows: list[Any]) -> list[bytes]:
    """The ids a claim of LIMIT would lock first, in order."""
    return claim_order(rows, rows[0][3], 0)[:LIMIT] if rows else []


def test_it_decides_when_the_named_queues_hold_the_backlog(store: MySQLJobStore, conn: Any) -> None:
    """Five queues of four priorities' jobs, one enqueued after another, plus a paused
    other queue: every level holds enough of theirs (or ran out), so the shortcut decides,
    and the first jobs it offers are the per-queue read's, in the same order."""
    for index in range(60):
        queue = QUEUES[index % len(QUEUES)]
        store.enqueue(new_job(queue=queue, priority=index % 4))
    for _ in range(5):
        store.enqueue(new_job(queue="paused-one", priority=1))
    store.set_queue_paused("paused-one", True)
    found = among_every_queue(_every_queue(conn), QUEUES, PER_LEVEL)
    assert found is not None
    assert _first(found) == _first(_per_queue(conn, QUEUES))


def test_it_defers_when_another_queue_fills_a_level(store: MySQLJobStore, conn: Any) -> None:
    """Forty older jobs of queue ``other`` fill priority 2's first rows: the named queues'
    jobs there cannot be known from them, so the shortcut answers None (taking the rows it
    saw would claim none of the named queues' due jobs); the store's claim then takes the
    named queues' jobs through the per-queue read."""
    for _ in range(2 * PER_LEVEL):
        store.enqueue(new_job(queue="other", priority=2))
    mine = [new_job(queue=QUEUES[index % len(QUEUES)], priority=2) for index in range(15)]
    for job in mine:
        store.enqueue(job)
    assert among_every_queue(_every_queue(conn), QUEUES, PER_LEVEL) is None
    claimed = store.claim_queue_jobs(
        node_id="n", queues=QUEUES, limit=LIMIT, priority_boost_seconds=0
    )
    assert [job.id for job in claimed] == [job.id for job in mine[:LIMIT]]


def test_the_shortcut_rests_after_a_miss_and_needs_enough_queues() -> None:
    shortcut = EveryQueueShortcut()
    assert not shortcut.worth_trying(SHORTCUT_MIN_QUEUES - 1)
    assert shortcut.worth_trying(SHORTCUT_MIN_QUEUES)
    shortcut.missed()
    assert [shortcut.worth_trying(20) for _ in range(SHORTCUT_REST_CLAIMS)] == [False] * 20
    assert shortcut.worth_trying(20)

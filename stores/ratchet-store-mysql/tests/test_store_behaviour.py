"""MySQL-specific behaviour beyond the kit: chunked batches stay all-or-nothing (the kit's
batch tests, ``ratchet_tck.store.shared.batches``, on this store's chunks), keys are
compared exactly, every outcome text is storable, matched (not changed) rows decide, and
claims under contention still fill their batch. Lock conflicts: ``test_lock_conflicts.py``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import JobStatus
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql import _sql as sql
from ratchet_store_mysql._claim import claim_order, lock_and_claim
from ratchet_store_mysql._enqueue import CHUNK_BYTES, CHUNK_ROWS
from ratchet_store_mysql._pool import connect
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job
from ratchet_tck.store.shared import batches
from ratchet_tck.store.shared.batches import *  # noqa: F403 (the kit's tests, on this module's hooks)

pytestmark = pytest.mark.server


@pytest.fixture
def enqueue_chunk_size() -> int:
    return CHUNK_ROWS


def test_large_payloads_are_split_by_size(store: MySQLJobStore) -> None:
    """Sixty jobs of 100 KB (two-byte characters) exceed one statement's byte budget: they
    go in several statements of one transaction, all stored intact."""
    text = "é" * 50_000
    jobs = [new_job(args_json=json.dumps([n, text], ensure_ascii=False)) for n in range(60)]
    assert 60 * len(text) * 4 > CHUNK_BYTES
    store.enqueue_many(jobs)
    assert store.count_jobs()[JobStatus.PENDING] == 60
    assert store.get_job(jobs[59].id).args == (59, text)  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", ["idempotency_key", "business_key"])
def test_keys_are_compared_exactly(store: MySQLJobStore, kind: str) -> None:
    """Keys differing only in letter case, accents or trailing spaces are different keys
    (VARBINARY columns: no case-insensitive or PAD SPACE collation merges them)."""
    variants = ["order-1", "Order-1", "order-1 ", "ordér-1"]
    jobs = [new_job(**{kind: key}) for key in variants]
    store.enqueue_many(jobs)
    for key, job in zip(variants, jobs, strict=True):
        if kind == "business_key":
            found = store.find_active_job_by_business_key(key)
            assert found is not None and found.id == job.id
        else:
            assert store.find_job_id_by_idempotency_key(key) == job.id
    with pytest.raises((DuplicateIdempotencyKeyError, BusinessKeyConflictError)):
        store.enqueue(new_job(**{kind: "order-1 "}))


def test_a_key_longer_than_its_column_is_refused_before_writing(store: MySQLJobStore) -> None:
    with pytest.raises(ValueError, match="at most 512"):
        store.enqueue_many([new_job(), new_job(business_key="k" * 513)])
    assert sum(store.count_jobs().values()) == 0


def test_every_error_text_is_recorded(store: MySQLJobStore) -> None:
    """An outcome must never fail on its message (the job would stay RUNNING on a live node
    forever): NUL characters are kept, lone surrogates (not encodable) become U+FFFD."""
    batches.assert_error_text_is_recorded_as(
        store, "bad\x00byte \udcff 🦀", "bad\x00byte \ufffd 🦀"
    )


def test_params_and_tags_round_trip(store: MySQLJobStore) -> None:
    params = {"tenant": "açme 🦀", "nested": {"list": [1, 2.5, None, True]}, "n": 3}
    batches.assert_params_and_tags_round_trip(store, params, ("b", "a", "🦀"))


def test_matched_rows_decide_not_changed_rows(store: MySQLJobStore) -> None:
    """CLIENT.FOUND_ROWS: an UPDATE that matches a row but leaves it as it was still counts
    1. Marking the start of a claim that recorded it already, and recording the same late
    outcome twice, are such UPDATEs; without the flag they would wrongly answer False."""
    store.enqueue(new_job())
    [first] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert first.start_recorded
    assert store.mark_started(first.id, first.claim_seq)  # recorded already: changes nothing
    assert store.release_claim(first.id, first.claim_seq, message="released")
    for _ in range(2):
        assert store.record_late_outcome(first.id, first.claim_seq, succeeded=True, message="ok")
    store.register_node("same")
    assert store._execute("UPDATE ratchet_node SET node_id = node_id WHERE node_id = 'same'") == 1


def test_a_claim_under_contention_still_fills_its_batch(
    store: MySQLJobStore, mysql_url: str
) -> None:
    """While another claim holds the first five jobs (open transaction), a second claim of
    five skips them and takes the next five, in claim order."""
    jobs = [new_job(priority=2) for _ in range(12)]
    for job in jobs:
        store.enqueue(job)  # one by one: distinct scheduled times, enqueue order
    other = connect(parse_store_url(mysql_url))
    try:
        with other.cursor() as cursor:
            cursor.execute(sql.STATEMENTS["claim_candidates"], {"per_level": 10})
            candidates = cursor.fetchall()
        now = candidates[0][3]
        other.begin()
        held = lock_and_claim(other, claim_order(candidates, now, 0), now=now, node_id="a", limit=5)
        assert [job.id for job in held] == [job.id for job in jobs[:5]]
        second = store.claim_due_jobs(node_id="b", limit=5, priority_boost_seconds=0)
        assert [job.id for job in second] == [job.id for job in jobs[5:10]]
    finally:
        other.rollback()
        other.close()


def _plans(conn: Any, query: str, params: list[Any]) -> list[tuple[str, str]]:
    """(access type, key) of each read of ratchet_job EXPLAIN shows ``query`` making (the
    lock's subquery of the paused queues reads another table, unlocked)."""
    with conn.cursor() as cursor:
        cursor.execute(f"EXPLAIN {query}", params)
        return [(row[3], row[5]) for row in cursor.fetchall() if row[2] == "ratchet_job"]


def test_locking_statements_read_only_the_listed_rows_on_a_small_table(
    store: MySQLJobStore, mysql_url: str
) -> None:
    """Every locking statement keyed by a list of ids reads those rows by primary key,
    however small the table: a locking scan of an index would lock every row it reads,
    so a claimer would hold the whole table and the next claimer would skip it all (the
    contention test above failed that way on a dozen rows). Checked by plan, as the
    optimizer would choose on a table of twelve jobs."""
    jobs = [new_job(priority=2) for _ in range(12)]
    for job in jobs:
        store.enqueue(job)
    ids = [job.id for job in jobs[:5]]
    now = datetime.now(UTC).replace(tzinfo=None)
    cases = " ".join([sql.RESULT_CASE] * len(ids))
    results = [value for job_id in ids for value in (job_id, "null")]
    statements = {
        "lock_candidates": (
            sql.statement("lock_candidates", ids=sql.placeholders(5)),
            [*ids, now],
        ),
        "claim_locked": (
            sql.statement("claim_locked", started=sql.STARTED_ALL, ids=sql.placeholders(5)),
            ["node", now, now, now, *ids],
        ),
        "lock_running": (sql.statement("lock_running", ids=sql.placeholders(5)), ids),
        "complete_locked": (
            sql.statement("complete_locked", cases=cases, ids=sql.placeholders(5)),
            [*results, *results, now, now, *ids],
        ),
    }
    conn = connect(parse_store_url(mysql_url))
    try:
        for name, (query, params) in statements.items():
            assert _plans(conn, query, params) == [("range", "PRIMARY")], name
        # Negative control: the check notices a statement that reads another way.
        unhinted = statements["lock_running"][0].replace("FORCE INDEX (PRIMARY)", "")
        scan = unhinted.replace("ratchet_job", "ratchet_job IGNORE INDEX (PRIMARY)", 1)
        assert _plans(conn, scan, ids) != [("range", "PRIMARY")]
    finally:
        conn.close()

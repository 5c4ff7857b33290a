"""MySQL-specific behaviour beyond the kit: chunked batches stay all-or-nothing, keys are
compared exactly, every outcome text is storable, matched (not changed) rows decide, and
claims under contention still fill their batch."""

from __future__ import annotations

import json
from collections.abc import Callable

import pymysql
import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import ExecutionStatus, JobStatus
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql import _statements as sql
from ratchet_store_mysql._claim import claim_order, lock_and_claim
from ratchet_store_mysql._enqueue import CHUNK_BYTES, CHUNK_ROWS
from ratchet_store_mysql._pool import connect, run_with_retries
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job

server = pytest.mark.server


@server
def test_a_conflict_in_a_later_chunk_rejects_the_earlier_chunks(store: MySQLJobStore) -> None:
    """A batch longer than one INSERT chunk is still one transaction: a used key in the
    second chunk leaves no job and no key of the first chunk behind."""
    holder = new_job(idempotency_key="used")
    store.enqueue(holder)
    batch = [new_job(idempotency_key=f"k{n}") for n in range(CHUNK_ROWS + 10)]
    batch[-1] = new_job(idempotency_key="used")
    with pytest.raises(DuplicateIdempotencyKeyError) as info:
        store.enqueue_many(batch)
    assert info.value.existing_job_id == holder.id
    assert store.count_jobs()[JobStatus.PENDING] == 1
    assert store.find_job_id_by_idempotency_key("k0") is None


@server
def test_large_payloads_are_split_by_size(store: MySQLJobStore) -> None:
    """Sixty jobs of 100 KB (two-byte characters) exceed one statement's byte budget: they
    go in several statements of one transaction, all stored intact."""
    text = "é" * 50_000
    jobs = [new_job(args_json=json.dumps([n, text], ensure_ascii=False)) for n in range(60)]
    assert 60 * len(text) * 4 > CHUNK_BYTES
    store.enqueue_many(jobs)
    assert store.count_jobs()[JobStatus.PENDING] == 60
    assert store.get_job(jobs[59].id).args == (59, text)  # type: ignore[union-attr]


@server
def test_business_key_conflict_in_a_batch_names_the_holder(store: MySQLJobStore) -> None:
    holder = new_job(business_key="invoice-9")
    store.enqueue(holder)
    with pytest.raises(BusinessKeyConflictError) as info:
        store.enqueue_many([new_job(business_key="other"), new_job(business_key="invoice-9")])
    assert (info.value.key, info.value.existing_job_id) == ("invoice-9", holder.id)
    assert store.find_active_job_by_business_key("other") is None


@server
@pytest.mark.parametrize("kind", ["idempotency_key", "business_key"])
def test_a_key_twice_in_one_batch_is_refused_before_writing(
    store: MySQLJobStore, kind: str
) -> None:
    with pytest.raises((DuplicateIdempotencyKeyError, BusinessKeyConflictError)):
        store.enqueue_many([new_job(**{kind: "same"}), new_job(**{kind: "same"})])
    assert sum(store.count_jobs().values()) == 0


@server
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


@server
def test_a_key_longer_than_its_column_is_refused_before_writing(store: MySQLJobStore) -> None:
    with pytest.raises(ValueError, match="at most 512"):
        store.enqueue_many([new_job(), new_job(business_key="k" * 513)])
    assert sum(store.count_jobs().values()) == 0


@server
def test_every_error_text_is_recorded(store: MySQLJobStore) -> None:
    """An outcome must never fail on its message (the job would stay RUNNING on a live node
    forever): NUL characters are kept, lone surrogates (not encodable) become U+FFFD."""
    store.enqueue(new_job())
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert store.fail_job(claimed.id, claimed.claim_seq, error="bad\x00byte \udcff 🦀")
    job = store.get_job(claimed.id)
    assert job is not None and job.last_error == "bad\x00byte \ufffd 🦀"
    [execution] = store.list_executions(claimed.id)
    assert (execution.status, execution.message) == (ExecutionStatus.FAILED, job.last_error)


@server
def test_params_and_tags_round_trip(store: MySQLJobStore) -> None:
    params = {"tenant": "açme 🦀", "nested": {"list": [1, 2.5, None, True]}, "n": 3}
    job = new_job(params=params, tags=("b", "a", "🦀"))
    store.enqueue(job)
    got = store.get_job(job.id)
    assert got is not None and got.params == params and got.tags == ("b", "a", "🦀")
    assert [j.id for j in store.list_jobs(tag="🦀")] == [job.id]
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert claimed.params == params


@server
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


@server
def test_a_lease_far_below_a_microsecond_is_still_a_valid_lease(store: MySQLJobStore) -> None:
    """Durations are whole microseconds; a smaller TTL becomes one microsecond, not zero."""
    assert store.try_lock("tiny", 1e-9, "a")
    assert store.renew_lock("tiny", 60, "a") in (True, False)
    assert store.try_lock("tiny", 60, "a")


@server
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
            cursor.execute(sql.CLAIM_CANDIDATES, {"per_level": 10})
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


def test_lock_conflicts_are_rerun_and_counted() -> None:
    """A deadlock (1213) or lock wait timeout (1205) reruns the work; other errors do not."""
    seen: list[BaseException] = []
    calls = iter(
        [
            pymysql.err.OperationalError(1213, "Deadlock found"),
            pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"),
            "done",
        ]
    )

    def attempt() -> object:
        outcome = next(calls)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    assert run_with_retries(attempt, on_conflict=seen.append) == "done"
    assert [exc.args[0] for exc in seen] == [1213, 1205]  # type: ignore[union-attr]
    with pytest.raises(pymysql.err.IntegrityError):
        run_with_retries(
            lambda: (_ for _ in ()).throw(pymysql.err.IntegrityError(1062, "dup")),
            on_conflict=seen.append,
        )
    assert len(seen) == 2


@server
def test_the_store_counts_no_lock_conflicts_in_normal_use(
    fresh_store: Callable[..., MySQLJobStore],
) -> None:
    store = fresh_store()
    store.enqueue(new_job())
    store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert store.lock_conflict_retries == 0

"""Transactional enqueue, the PyMySQL specifics: autocommit connections, a snapshot older
than the key's holder, connections without utf8mb4, objects that are not connections.

Commit, rollback, conflicts, keys held in the caller's own transaction, the SQLAlchemy
Connection and Session and the application API are contracts of the kit
(``ratchet_tck.store.transactional``), run by ``test_conformance.py`` through
:class:`~ratchet_store_mysql.harness.MySQLStoreHarness`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pymysql
import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql._url import parse_store_url
from ratchet_tck.store import new_job
from ratchet_tck.store.shared.claim_plans import claimable_ids

pytestmark = pytest.mark.server


claimable = claimable_ids  # the jobs a worker on another connection can claim now


@pytest.fixture
def connect(mysql_url: str) -> Iterator[Callable[..., pymysql.connections.Connection[Any]]]:
    """Opens the application's own PyMySQL connections (PyMySQL defaults: autocommit off,
    utf8mb4, the server's isolation level); closes them after the test."""
    opened: list[pymysql.connections.Connection[Any]] = []
    kwargs = dict(parse_store_url(mysql_url).connect_kwargs)

    def open_connection(**overrides: Any) -> pymysql.connections.Connection[Any]:
        conn = pymysql.connect(**{**kwargs, **overrides})
        opened.append(conn)
        return conn

    yield open_connection
    for conn in opened:
        if conn.open:
            conn.close()


def test_the_callers_own_writes_commit_with_the_job(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """The job and the application's own rows of the same transaction become visible
    together."""
    job = new_job()
    conn = connect()
    with conn.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE orders (id INT)")
        cursor.execute("INSERT INTO orders VALUES (1)")
    store.enqueue_in(conn, job)
    assert claimable(store) == []
    conn.commit()
    with conn.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM orders")
        assert cursor.fetchone() == (1,)
    assert claimable(store) == [job.id]


def test_an_explicit_transaction_on_an_autocommit_connection(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """``conn.begin()`` on an autocommit connection: the jobs follow its commit or rollback."""
    kept, dropped = new_job(), new_job()
    conn = connect(autocommit=True)
    conn.begin()
    store.enqueue_in(conn, kept)
    assert store.get_job(kept.id) is None
    conn.commit()
    conn.begin()
    store.enqueue_in(conn, dropped)
    conn.rollback()
    assert store.get_job(kept.id) is not None
    assert store.get_job(dropped.id) is None


def test_an_idle_autocommit_connection_commits_at_once(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """Outside any transaction there is nothing to join: the jobs are stored atomically."""
    job = new_job()
    store.enqueue_many_in(connect(autocommit=True), [job])
    assert claimable(store) == [job.id]


def test_a_conflict_names_a_holder_newer_than_the_callers_snapshot(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    """Under REPEATABLE READ the caller's snapshot can predate the key's holder: the
    conflict still names it, after rolling back to a savepoint, and the caller's other
    work commits."""
    conn = connect()
    with conn.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SELECT COUNT(*) FROM ratchet_job")  # the snapshot starts here
    holder = new_job(business_key="invoice-1", idempotency_key="req-1")
    store.enqueue(holder)
    first, last = new_job(), new_job()
    store.enqueue_in(conn, first)
    with pytest.raises(BusinessKeyConflictError) as info:
        store.enqueue_in(conn, new_job(business_key="invoice-1"))
    assert info.value.existing_job_id == holder.id
    with pytest.raises(DuplicateIdempotencyKeyError) as duplicate:
        store.enqueue_many_in(conn, [new_job(), new_job(idempotency_key="req-1")])
    assert duplicate.value.existing_job_id == holder.id
    store.enqueue_in(conn, last)
    conn.commit()
    assert sorted(claimable(store)) == sorted([holder.id, first.id, last.id])


def test_a_connection_without_utf8mb4_is_refused(
    store: MySQLJobStore, connect: Callable[..., Any]
) -> None:
    with pytest.raises(RatchetError, match="utf8mb4"):
        store.enqueue_in(connect(charset="latin1"), new_job())


def test_other_objects_are_refused(store: MySQLJobStore) -> None:
    with pytest.raises(TypeError, match=r"pymysql\.connections\.Connection"):
        store.enqueue_in(object(), new_job())

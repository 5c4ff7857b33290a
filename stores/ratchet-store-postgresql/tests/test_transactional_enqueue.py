"""Transactional enqueue, the psycopg specifics: autocommit connections, transaction blocks,
a failed transaction, objects that are not connections.

Commit, rollback, conflicts, keys held in the caller's own transaction, the SQLAlchemy
Connection and Session and the application API are contracts of the kit
(``ratchet_tck.store.transactional``), run by ``test_conformance.py`` through
:class:`~ratchet_store_postgresql.harness.PostgreSQLStoreHarness`.
"""

from __future__ import annotations

import psycopg
import pytest

from ratchet.errors import RatchetError
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_tck.store import new_job
from ratchet_tck.store.shared.claim_plans import claimable_ids

pytestmark = pytest.mark.server


claimable = claimable_ids  # the jobs a worker on another connection can claim now


def test_inside_a_transaction_block_of_an_autocommit_connection(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """``with conn.transaction()`` on an autocommit connection: committed at block end,
    discarded when the block raises."""
    kept, dropped = new_job(), new_job()
    with psycopg.connect(postgresql_url, autocommit=True) as conn:
        with conn.transaction():
            store.enqueue_in(conn, kept)
            assert store.get_job(kept.id) is None
        with pytest.raises(ZeroDivisionError), conn.transaction():
            store.enqueue_in(conn, dropped)
            raise ZeroDivisionError
    assert store.get_job(kept.id) is not None
    assert store.get_job(dropped.id) is None


def test_an_idle_autocommit_connection_commits_at_once(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """Outside any transaction there is nothing to join: the job is stored atomically."""
    job = new_job()
    with psycopg.connect(postgresql_url, autocommit=True) as conn:
        store.enqueue_in(conn, job)
    assert claimable(store) == [job.id]


def test_the_callers_own_writes_commit_with_the_job(
    store: PostgreSQLJobStore, postgresql_url: str
) -> None:
    """The job and the application's own rows of the same transaction become visible
    together."""
    job = new_job()
    with psycopg.connect(postgresql_url) as conn:
        conn.execute("CREATE TEMPORARY TABLE orders (id int)")
        conn.execute("INSERT INTO orders VALUES (1)")
        store.enqueue_in(conn, job)
        assert claimable(store) == []
        conn.commit()
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (1,)
    assert claimable(store) == [job.id]


def test_a_failed_transaction_is_refused(store: PostgreSQLJobStore, postgresql_url: str) -> None:
    """A caller's transaction that already failed cannot take a job: say so plainly."""
    with psycopg.connect(postgresql_url) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        with pytest.raises(RatchetError, match="roll it back first"):
            store.enqueue_in(conn, new_job())


def test_other_objects_are_refused(store: PostgreSQLJobStore) -> None:
    with pytest.raises(TypeError, match="psycopg.Connection"):
        store.enqueue_in(object(), new_job())

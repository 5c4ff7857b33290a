"""Wakeup hints inside enqueues: one NOTIFY per insert, delivered at commit, never for an
insert that failed or a transaction that rolled back."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import SupportsEnqueueHints, new_job_id
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

CHANNEL = "ratchet_hint_test"


class Listener:
    """A LISTENing connection; :meth:`received` returns the payloads that arrived."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(f"LISTEN {CHANNEL}")

    def received(self, wait: float = 0.5) -> list[dict[str, Any]]:
        return [json.loads(n.payload) for n in self.conn.notifies(timeout=wait, stop_after=50)]

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def listener(store: PostgreSQLJobStore) -> Any:
    store.send_hints_with_enqueue(CHANNEL, lambda p: json.dumps({"prio": p}))
    listening = Listener(store.conninfo)
    yield listening
    listening.close()


def test_the_store_declares_the_capability(store: PostgreSQLJobStore) -> None:
    assert isinstance(store, SupportsEnqueueHints)


def test_no_hints_until_asked(store: PostgreSQLJobStore) -> None:
    listening = Listener(store.conninfo)
    try:
        store.enqueue(new_job())
        assert listening.received() == []
    finally:
        listening.close()


def test_each_enqueue_sends_one_hint_with_the_highest_priority(
    store: PostgreSQLJobStore, listener: Listener
) -> None:
    store.enqueue(new_job(priority=3))  # the one-row INSERT
    assert listener.received() == [{"prio": 3}]
    store.enqueue(new_job(tags=("a",), idempotency_key=new_job_id()))  # the array form
    assert listener.received() == [{"prio": 2}]
    store.enqueue_many([new_job(priority=1), new_job(priority=4), new_job()])
    assert listener.received() == [{"prio": 4}]
    store.enqueue_many([new_job() for _ in range(2500)])  # three chunks, one transaction
    assert listener.received() == [{"prio": 2}]


def test_a_failed_insert_sends_nothing(store: PostgreSQLJobStore, listener: Listener) -> None:
    store.enqueue(new_job(business_key="held"))
    listener.received()
    with pytest.raises(BusinessKeyConflictError):
        store.enqueue(new_job(business_key="held"))
    with pytest.raises(BusinessKeyConflictError):
        store.enqueue_many([new_job(), new_job(business_key="held")])
    assert listener.received() == []


def test_transactional_enqueue_hints_at_commit_and_never_after_rollback(
    store: PostgreSQLJobStore, listener: Listener
) -> None:
    with psycopg.connect(store.conninfo) as app_conn:
        store.enqueue_in(app_conn, new_job())
        assert listener.received(0.3) == []  # not committed yet: nothing visible, no hint
        app_conn.commit()
        assert listener.received() == [{"prio": 2}]
        store.enqueue_in(app_conn, new_job())
        app_conn.rollback()
        assert listener.received(0.3) == []

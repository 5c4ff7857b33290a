"""Resilience: the first calls after a server crash and restart do not fail on the stale
pooled connections, and an enqueue whose answer was lost is stored exactly once.

pymongo hides most stale connections by itself (it polls sockets idle for over a second,
clears the pool after a network error and retries reads once), but not commands (``hello``,
the store's database clock) nor, on a standalone server, writes. The crash tests therefore
restart a private, throwaway FerretDB (the binary that ``scripts/services up ferretdb``
builds, on its SQLite backend, in a temporary directory, on a free port) within a second:
the shared server cannot be restarted under other people's tests. That is also why the kit's
reconnection contracts (``ratchet_tck.store.reconnect``, which have the server drop the
connections of the store under test) are N/A for this store: MongoDB has no command that
closes another client's connections (``killOp`` ends operations, not connections), so the
same first calls (``FIRST_CALLS``) are checked here, after a crash of a private server.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo.collection import Collection
from pymongo.errors import AutoReconnect

from ratchet_store_mongodb import MongoDBJobStore
from ratchet_store_mongodb import _schema as schema
from ratchet_tck.servers import PrivateServer
from ratchet_tck.store import new_job, run_concurrently
from ratchet_tck.store.databases import StoreTestDatabase
from ratchet_tck.store.reconnect import FIRST_CALLS
from ratchet_tck.store.shared.lost_answers import *  # noqa: F403 (the kit's tests; one replaced below)
from ratchet_tck.store.shared.lost_answers import assert_stored_once

pytestmark = pytest.mark.server

POOL_SIZE = 4


def _ferretdb_binary() -> str | None:
    cache = os.environ.get(
        "RATCHET_SERVICES_CACHE", os.path.expanduser("~/.cache/ratchet-services")
    )
    built = sorted(glob.glob(os.path.join(cache, "ferretdb", "*", "ferretdb")))
    return shutil.which("ferretdb") or (built[-1] if built else None)


class PrivateFerretDB(PrivateServer):
    """One FerretDB on its own SQLite directory and port; crash() and start() at will."""

    def __init__(self, binary: str, root: Path) -> None:
        super().__init__(root)
        self.binary = binary
        (root / "data").mkdir()

    @property
    def url(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/ratchet"

    def command(self) -> list[str]:
        return [self.binary, f"--listen-addr=127.0.0.1:{self.port}", "--handler=sqlite",
                f"--sqlite-url=file:{self.root / 'data'}/", f"--state-dir={self.root}",
                "--debug-addr=-", "--telemetry=disable", "--log-level=warn"]  # fmt: skip

    def answers(self) -> bool:  # FerretDB listens within milliseconds
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
        except OSError:
            return False
        return True


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[PrivateFerretDB]:
    binary = _ferretdb_binary()
    if binary is None:
        pytest.skip("FerretDB is not built: run `scripts/services up ferretdb` first")
    with PrivateFerretDB(binary, tmp_path).running() as server:
        yield server


@pytest.mark.slow
@pytest.mark.parametrize("call", list(FIRST_CALLS))
def test_the_first_call_after_a_crash_and_restart_succeeds(
    private_server: PrivateFerretDB, call: str
) -> None:
    """Every pooled connection is used, the server is killed and started again at once
    (so the dead connections have been idle for less than pymongo's one-second socket
    check): the next call, whatever it is, succeeds.

    On failure: a call whose first command went out on a dead pooled connection must run
    that command once more (``_reconnect.retry_once_if_lost``): ``_now`` for the clock (a
    ``hello``, which pymongo does not retry), the whole enqueue for writes."""
    store = MongoDBJobStore.from_url(private_server.url)
    try:
        job = new_job()
        store.enqueue(job)
        run_concurrently([store.list_jobs] * POOL_SIZE)
        private_server.crash()
        private_server.start()
        assert FIRST_CALLS[call](store, job)
    finally:
        store.close()


# -- an enqueue whose answer was lost ---------------------------------------------------


@pytest.fixture(scope="module")
def mongodb_url(mongodb_url: str, store_test_database: StoreTestDatabase) -> str:
    """This module's own database: its tests count documents, so a reset of the shared test
    database by a concurrent run must not reach them."""
    return store_test_database.own_database(mongodb_url, "ratchet_test_mongo_reconnect")


def _lose_the_first_answer(
    monkeypatch: pytest.MonkeyPatch, store: MongoDBJobStore, collection: str, *, applied: bool
) -> list[int]:
    """The first ``insert_many`` into ``collection`` is applied (or not), then raises
    AutoReconnect as if the connection died before the answer came back; the clean-up of
    that failed attempt fails too (the server was unreachable for it). Returns the number
    of documents of every ``insert_many`` into ``collection``."""
    real = Collection.insert_many
    calls: list[int] = []

    def insert_many(self: Collection[Any], documents: Any, *args: Any, **kwargs: Any) -> Any:
        if self.name == collection:
            documents = list(documents)
            calls.append(len(documents))
            if len(calls) == 1:
                if applied:
                    real(self, documents, *args, **kwargs)
                raise AutoReconnect("connection closed")
        return real(self, documents, *args, **kwargs)

    monkeypatch.setattr(Collection, "insert_many", insert_many)
    monkeypatch.setattr(store, "_undo_enqueue", lambda *args: None)
    return calls


@pytest.fixture
def lose_first_enqueue(
    store: MongoDBJobStore, monkeypatch: pytest.MonkeyPatch
) -> Callable[[bool], list[int]]:
    """The kit's hook: the first insert of idempotency keys loses its answer."""
    return lambda applied: _lose_the_first_answer(
        monkeypatch, store, schema.IDEMPOTENCY_KEYS, applied=applied
    )


@pytest.mark.parametrize("collection", [schema.JOBS, schema.IDEMPOTENCY_KEYS])
@pytest.mark.parametrize("size", [1, 3])
def test_an_enqueue_whose_answer_was_lost_is_stored_once(
    store: MongoDBJobStore, monkeypatch: pytest.MonkeyPatch, collection: str, size: int
) -> None:
    """The insert of the jobs (or of their idempotency keys) is applied, then its answer is
    lost and the failed attempt cannot be cleaned up. The retry meets its own documents
    (same job ids) and succeeds: no false DuplicateIdempotencyKeyError, no second job.

    On failure: a retried enqueue must count documents naming its own job ids as its own
    (``MongoDBJobStore._enqueue_all`` with ``retry``)."""
    jobs = [new_job(idempotency_key=f"k-{uuid.uuid4()}", tags=("a",)) for _ in range(size)]
    _lose_the_first_answer(monkeypatch, store, collection, applied=True)
    store.enqueue_many(jobs)  # without the retry: StoreUnavailableError
    monkeypatch.undo()
    assert_stored_once(store, jobs)

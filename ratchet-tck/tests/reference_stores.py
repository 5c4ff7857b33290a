"""The embedded store with the capabilities it lacks, done right: the baseline that the
broken stores of the capability contracts (``broken_capability_stores.py``) each break in
one place, and the harness those contracts reach it through.

* :class:`ReferenceStore` adds a connection the harness can "drop" as a server restart
  would, which the store notices and replaces before using it (transactional enqueue is
  the embedded store's own).
* :class:`ReferenceHarness` supplies every hook of :class:`ratchet_tck.StoreHarness` the
  embedded store can support, for whichever store class the suite tests.

Neither is a broken store, so neither has a row in the catalogue; the control test runs the
catalogue's contract tests against :class:`ReferenceStore`.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ratchet.spi import JobStore
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet_tck import StoreHarness
from ratchet_tck.store import TransactionFactory

SAVEPOINT = "ratchet_enqueue"


def open_connection(path: str) -> sqlite3.Connection:
    """A store connection configured as the embedded store configures its own."""
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


class ReferenceStore(SQLiteJobStore):
    """SQLite plus a droppable connection."""

    # -- the connection a "server" can drop ----------------------------------------------

    def drop_server_side(self) -> int:
        """What a server restart does to a pooled connection: closed under the store."""
        with self._lock:
            self._conn.close()
        return 1

    def _connection_lost(self) -> bool:
        try:
            self._conn.total_changes  # noqa: B018 (raises on a closed connection)
        except sqlite3.ProgrammingError:
            return True
        return False

    def _reconnect(self) -> None:
        assert self.path is not None, "the reference store runs on a file"
        self._db.conn = self._conn = open_connection(self.path)

    def _check_open(self) -> None:
        super()._check_open()
        if self._connection_lost():  # looked at before anything is sent on it
            self._reconnect()


class ReferenceHarness(StoreHarness):
    """Every hook the embedded store can support, for the store class under test."""

    def __init__(self, url: str, store_class: type[SQLiteJobStore]) -> None:
        super().__init__(url)
        self.path = url.removeprefix("sqlite:///")
        self.store_class = store_class

    def open_store(self, url: str, *, auto_migrate: bool = True) -> JobStore:
        return self.store_class(url.removeprefix("sqlite:///"), auto_migrate=auto_migrate)

    def transaction_factories(self) -> Mapping[str, TransactionFactory]:
        path = self.path
        return {"sqlite3": lambda: contextlib.closing(sqlite3.connect(path, timeout=30.0))}

    @contextmanager
    def blank_database(self) -> Iterator[str]:
        folder = Path(tempfile.mkdtemp(prefix="ratchet-tck-blank-"))
        try:
            yield f"sqlite:///{folder / 'blank.db'}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def drop_connections(self, store: JobStore) -> int:
        if not isinstance(store, ReferenceStore):
            raise NotImplementedError  # N/A: this store has no connection to drop
        return store.drop_server_side()

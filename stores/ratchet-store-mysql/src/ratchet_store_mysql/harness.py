"""Conformance-kit harness of the MySQL store (``ratchet-tck certify --store mysql://…``
builds it from the plugin record's ``tck_harness``; the package's own conformance test uses
it too). Imported only where ``ratchet-tck`` is installed.

* Application transactions: a PyMySQL connection with PyMySQL's defaults (autocommit off,
  utf8mb4, the server's isolation level) and, when SQLAlchemy is installed, its Connection
  and Session shapes on the same server.
* Blank databases: ``ratchet_tck_blank_<random>`` on the same server (the user needs the
  CREATE and DROP privileges on it), dropped afterwards.
* Dropped connections: ``KILL`` of exactly the store's pooled sessions, so other users of
  the server are never touched.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pymysql

from ratchet.spi import JobStore
from ratchet_store_mysql._url import parse_store_url
from ratchet_store_mysql.store import MySQLJobStore
from ratchet_store_mysql.testing import drop_database, ensure_database, with_database
from ratchet_tck.store.harness import StoreHarness, TransactionFactory, sqlalchemy_transactions

__all__ = ["MySQLStoreHarness"]


class MySQLStoreHarness(StoreHarness):
    """Hooks on the server of ``url``."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.connect_kwargs = dict(parse_store_url(url).connect_kwargs)
        self._engine: Any = None

    def _connect(self) -> pymysql.connections.Connection[Any]:
        return pymysql.connect(**self.connect_kwargs)

    def open_store(self, url: str, *, auto_migrate: bool = True) -> JobStore:
        return MySQLJobStore.from_url(url, auto_migrate=auto_migrate)

    def transaction_factories(self) -> Mapping[str, TransactionFactory]:
        kinds: dict[str, TransactionFactory] = {
            "PyMySQL": lambda: contextlib.closing(self._connect())
        }
        try:
            import sqlalchemy
        except ImportError:  # optional: the SQLAlchemy shapes are checked where installed
            return kinds
        if self._engine is None:
            self._engine = sqlalchemy.create_engine("mysql+pymysql://", creator=self._connect)
        return {**kinds, **sqlalchemy_transactions(self._engine)}

    @contextmanager
    def blank_database(self) -> Iterator[str]:
        url = with_database(self.url, f"ratchet_tck_blank_{uuid.uuid4().hex[:10]}")
        ensure_database(url)
        try:
            yield url
        finally:
            drop_database(url)

    def drop_connections(self, store: JobStore) -> int:
        assert isinstance(store, MySQLJobStore), f"not a MySQL store: {store!r}"
        # The kit calls this while no connection is in use: the idle list holds them all.
        idle = list(store._pool._idle)
        sessions = [int(conn.thread_id()) for conn in idle]  # type: ignore[no-untyped-call]  # untyped in types-PyMySQL
        kwargs = {**self.connect_kwargs, "database": None}
        with pymysql.connect(**kwargs, autocommit=True) as admin, admin.cursor() as cursor:
            for session in sessions:
                cursor.execute(f"KILL {int(session)}")
            deadline = time.monotonic() + 10
            while sessions:
                cursor.execute(
                    "SELECT ID FROM information_schema.PROCESSLIST WHERE ID IN %s",
                    (tuple(sessions),),
                )
                if not cursor.fetchall():
                    break
                assert time.monotonic() < deadline, f"sessions {sessions} survived KILL"
                time.sleep(0.01)
        return len(sessions)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

"""Conformance-kit harness of the PostgreSQL store (``ratchet-tck certify --store
postgresql://…`` builds it from the plugin record's ``tck_harness``; the package's own
conformance test uses it too). Imported only where ``ratchet-tck`` is installed.

* Application transactions: a psycopg connection (not autocommit) and, when SQLAlchemy is
  installed, its Connection and Session shapes on the same server.
* Blank databases: ``ratchet_tck_blank_<random>`` on the same server (the role needs
  CREATEDB), dropped ``WITH (FORCE)`` afterwards.
* Dropped connections: ``pg_terminate_backend`` of exactly the store's pooled backends, so
  other users of the server are never touched.
* Hint listener: ``LISTEN`` on a connection of its own.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from ratchet.spi import JobStore
from ratchet_store_postgresql._url import parse_store_url
from ratchet_store_postgresql.store import PostgreSQLJobStore
from ratchet_store_postgresql.testing import ensure_database, with_database
from ratchet_tck.store.harness import StoreHarness, TransactionFactory, sqlalchemy_transactions

__all__ = ["PostgreSQLStoreHarness"]


class PostgreSQLStoreHarness(StoreHarness):
    """Hooks on the server of ``url``."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.conninfo = parse_store_url(url).conninfo
        self._engine: Any = None

    def open_store(self, url: str, *, auto_migrate: bool = True) -> JobStore:
        return PostgreSQLJobStore.from_url(url, auto_migrate=auto_migrate)

    def transaction_factories(self) -> Mapping[str, TransactionFactory]:
        conninfo = self.conninfo
        kinds: dict[str, TransactionFactory] = {"psycopg": lambda: psycopg.connect(conninfo)}
        try:
            import sqlalchemy
        except ImportError:  # optional: the SQLAlchemy shapes are checked where installed
            return kinds
        if self._engine is None:
            self._engine = sqlalchemy.create_engine(
                "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo)
            )
        return {**kinds, **sqlalchemy_transactions(self._engine)}

    @contextmanager
    def blank_database(self) -> Iterator[str]:
        name = f"ratchet_tck_blank_{uuid.uuid4().hex[:10]}"
        url = with_database(self.url, name)
        ensure_database(url)
        try:
            yield url
        finally:
            admin = with_database(self.url, "postgres")
            with psycopg.connect(parse_store_url(admin).conninfo, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )

    def drop_connections(self, store: JobStore) -> int:
        assert isinstance(store, PostgreSQLJobStore), f"not a PostgreSQL store: {store!r}"
        # psycopg_pool lists its idle connections nowhere public; the kit calls this while
        # none is in use, so the idle deque holds every connection of the store.
        pids = [conn.info.backend_pid for conn in list(store._pool._pool)]
        with psycopg.connect(store.conninfo, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
            deadline = time.monotonic() + 10
            while _alive(admin, pids):  # the backends exit within milliseconds
                assert time.monotonic() < deadline, f"backends {pids} survived termination"
                time.sleep(0.01)
        return len(pids)

    @contextmanager
    def hint_listener(self, channel: str) -> Iterator[Callable[[float], list[str]]]:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))

            def received(wait: float) -> list[str]:
                return [n.payload for n in conn.notifies(timeout=wait, stop_after=50)]

            yield received

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def _alive(admin: psycopg.Connection[Any], pids: list[int]) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s::int[])", (pids,)
    ).fetchone()
    return row is not None and int(row[0]) > 0

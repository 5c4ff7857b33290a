"""The connection plumbing every store operation goes through.

A ``psycopg_pool.ConnectionPool`` of autocommit connections: a single statement is its own
transaction (one round trip); multi-statement steps open ``conn.transaction()``. Transport
failures (connection lost, server restarting, backend terminated, no free connection in
time) raise :class:`~ratchet.errors.StoreUnavailableError` with the password redacted,
never ``False``; after a broken connection the pool tests its idle ones at once, so the
next call gets a live connection instead of another dead one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ratchet._redact import redact
from ratchet.errors import RatchetError, StoreUnavailableError
from ratchet_store_postgresql._url import parse_store_url

__all__ = ["Connection", "PooledStore"]

log = logging.getLogger("ratchet.stores.postgresql")

Connection = psycopg.Connection[Any]

# Errors that mean "the server could not be used", not "the statement was wrong":
# connection loss, admin shutdown/termination, pool timeouts (OperationalError), and use
# of a connection that is already closed (InterfaceError).
_TRANSPORT_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)


def _configure(conn: Connection) -> None:
    """Every pooled connection reads times in UTC (they are also normalised on read)."""
    conn.execute("SET TIME ZONE 'UTC'")


class PooledStore:
    """A connection pool on one PostgreSQL database, and helpers to run statements on it."""

    def __init__(
        self,
        url: str,
        *,
        pool_min_size: int = 1,
        pool_max_size: int = 10,
        pool_timeout: float = 10.0,
    ) -> None:
        """Open (in the background) a pool on ``url``; raises InvalidStoreURLError.

        ``pool_timeout`` is how long a call waits for a free connection (or for the server
        to come back) before raising StoreUnavailableError.
        """
        settings = parse_store_url(url)
        self._display = settings.display
        self._conninfo = settings.conninfo
        self._closed = False
        self._close_lock = threading.Lock()
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            settings.conninfo,
            kwargs={"autocommit": True},
            min_size=pool_min_size,
            max_size=max(pool_min_size, pool_max_size, 1),
            timeout=pool_timeout,
            configure=_configure,
            name=f"ratchet-{settings.display}",
            open=False,
        )
        self._pool.open(wait=False)

    def describe(self) -> str:
        """``postgresql://user@host:port/dbname``: never the password or query string."""
        return self._display

    @property
    def conninfo(self) -> str:
        """The libpq connection string, password included: for opening companion
        connections (the LISTEN/NOTIFY coordinator). Never log it."""
        return self._conninfo

    # -- connections ---------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled autocommit connection; transport failures become StoreUnavailableError."""
        if self._closed:
            raise RatchetError(f"The store {self._display} is closed.")
        borrowed: Connection | None = None
        try:
            with self._pool.connection() as conn:
                borrowed = conn
                yield conn
        except _TRANSPORT_ERRORS as exc:
            if borrowed is None or borrowed.broken or borrowed.closed:
                self._drop_dead_connections()
            raise StoreUnavailableError(
                f"PostgreSQL store {self._display} is unavailable: {redact(str(exc))}"
            ) from exc

    def _drop_dead_connections(self) -> None:
        """After a broken connection the server probably dropped its siblings too (restart,
        ``pg_terminate_backend``): test the idle ones now so the next call gets a live one."""
        try:
            self._pool.check()
        except Exception as exc:  # the pool reconnects in the background anyway
            log.debug("checking the pool of %s failed: %s", self._display, redact(str(exc)))

    def _execute(self, statement: str, params: Any = None) -> int:
        """Run one statement (its own transaction); returns the affected row count."""
        with self._connection() as conn:
            return conn.execute(statement, params).rowcount

    def _one(self, statement: str, params: Any = None) -> tuple[Any, ...] | None:
        with self._connection() as conn:
            return conn.execute(statement, params).fetchone()

    def _all(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            return conn.execute(statement, params).fetchall()

    def close(self) -> None:
        """Close the pool (waiting briefly for borrowed connections). Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()

"""The connection plumbing every store operation goes through, and the shared SQL layer's
primitives on it (:class:`ratchet.spi.sql.SQLJobStore`: ``_query``, ``_update``,
``_transaction``).

A ``psycopg_pool.ConnectionPool`` of autocommit connections: a single statement is its own
transaction (one round trip); multi-statement steps open ``conn.transaction()``. Transport
failures (connection lost, server restarting, backend terminated, no free connection in
time) raise :class:`~ratchet.errors.StoreUnavailableError` with the password redacted,
never ``False``.

After a server restart (or ``pg_terminate_backend``) every idle pooled connection is dead,
and the first calls must not fail on them while the server is already back:

* Before a pooled connection is used, its socket is polled (no round trip, no statement
  sent): an idle connection is never sent anything by a healthy server, so a readable
  socket means the server hung up. Such a connection is closed (the pool replaces it) and
  another is taken. This protects every call, fenced writes included, because nothing was
  sent on the dead connection.
* A connection that breaks *in use* raises :class:`ConnectionLostError`; the pool then
  tests its idle connections at once. Idempotent calls (reads; enqueues, which carry their
  job ids) are run once more (:func:`ratchet.spi.run_idempotent`): the second attempt
  gets a new or just-tested connection, so one retry is enough; a second loss
  means the server is going away again and the caller must hear of it. Claims and fenced
  outcome writes are not retried here: the server may have applied them before the answer
  was lost, and only the engine can read back what happened.
"""

from __future__ import annotations

import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from ratchet.errors import RatchetError, StoreUnavailableError
from ratchet.spi import ConnectionLostError, get_logger, redact, run_idempotent
from ratchet.spi.sql import Params, Row, SQLSession, Statements
from ratchet_store_postgresql._url import parse_store_url

__all__ = ["Connection", "ConnectionLostError", "PooledStore", "PostgreSQLSession"]

log = get_logger("ratchet.stores.postgresql")

Connection = psycopg.Connection[Any]
T = TypeVar("T")

# Errors that mean "the server could not be used", not "the statement was wrong":
# connection loss, admin shutdown/termination, pool timeouts (OperationalError), and use
# of a connection that is already closed (InterfaceError).
_TRANSPORT_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)


def _configure(conn: Connection) -> None:
    """Every pooled connection reads times in UTC (they are also normalised on read)."""
    conn.execute("SET TIME ZONE 'UTC'")


def _server_closed(conn: psycopg.BaseConnection[Any]) -> bool:
    """Whether the server has hung up on this idle connection, seen without a round trip.

    The store's connections never LISTEN, so an idle one receives nothing from a healthy
    server: a readable socket means the server closed it (EOF), usually after a FATAL
    "terminating connection" message. A false alarm only costs a reconnect.
    """
    if conn.closed or conn.broken:
        return True
    try:
        fd = conn.pgconn.socket
        if hasattr(select, "poll"):  # no FD_SETSIZE limit, unlike select()
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)


def _placeholder(name: str) -> str:
    return f"%({name})s"


class PostgreSQLSession(SQLSession):
    """Named statements on the connection of one open transaction."""

    def __init__(self, conn: Connection, statements: Statements) -> None:
        super().__init__(statements, _placeholder)
        self.conn = conn

    def execute_text(self, text: str, params: Params) -> int:
        return self.conn.execute(text, params).rowcount

    def query_text(self, text: str, params: Params) -> list[Row]:
        return self.conn.execute(text, params).fetchall()


class PooledStore:
    """A connection pool on one PostgreSQL database, and the primitives of the shared SQL
    layer on it: statements by name (the store's ``statements``)."""

    statements: Statements

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
        """A live pooled autocommit connection, used once (never retried).

        Transport failures become StoreUnavailableError; :class:`ConnectionLostError`
        when the connection broke in use (then the pool's idle ones are tested at once).
        """
        if self._closed:
            raise RatchetError(f"The store {self._display} is closed.")
        borrowed: Connection | None = None
        try:
            with self._live_connection() as conn:
                borrowed = conn
                yield conn
        except _TRANSPORT_ERRORS as exc:
            lost = borrowed is not None and (borrowed.broken or borrowed.closed)
            if borrowed is None or lost:
                self._drop_dead_connections()
            error = ConnectionLostError if lost else StoreUnavailableError
            raise error(
                f"PostgreSQL store {self._display} is unavailable: {redact(str(exc))}"
            ) from exc

    @contextmanager
    def _live_connection(self) -> Iterator[Connection]:
        """A pooled connection that the server has not hung up on (see :func:`_server_closed`).

        Dead ones are closed, so the pool replaces them, before anything is sent on them.
        Bounded: after ``max_size`` dead ones (the whole pool) the next one is used as is.
        """
        for remaining in range(self._pool.max_size, -1, -1):
            with self._pool.connection() as conn:
                if remaining and _server_closed(conn):
                    log.debug("discarding a connection to %s the server closed", self._display)
                    conn.close()
                    continue
                yield conn
                return

    def _drop_dead_connections(self) -> None:
        """After a broken connection the server probably dropped its siblings too (restart,
        ``pg_terminate_backend``): test the idle ones now so the next call gets a live one."""
        try:
            self._pool.check()
        except Exception as exc:  # the pool reconnects in the background anyway
            log.debug("checking the pool of %s failed: %s", self._display, redact(str(exc)))

    # -- the shared layer's primitives ---------------------------------------------------

    def _idempotent(self, call: Callable[[bool], T]) -> T:
        """``call`` retried once on a lost connection (:func:`ratchet.spi.run_idempotent`)."""
        return run_idempotent(call, log=log, store=self._display)

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        """Every row of the read ``name``; retried once on a lost connection."""
        statement = self.statements[name]

        def run(_retry: bool) -> list[Row]:
            with self._connection() as conn:
                return conn.execute(statement, params).fetchall()

        return self._idempotent(run)

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        """Run the write ``name`` (its own transaction); the affected row count.

        ``idempotent``: it may run twice with the same effect and answer, so a lost
        connection retries it once.
        """
        statement = self.statements[name]

        def run(_retry: bool) -> int:
            with self._connection() as conn:
                return conn.execute(statement, params).rowcount

        return self._idempotent(run) if idempotent else run(False)

    def _returning(self, name: str, params: Params) -> list[Row]:
        """Every row of the write ``name`` (its own transaction): a claim, an outcome, a
        recovery whose rows are the answer. Never retried: a lost answer may hide what the
        server applied."""
        with self._connection() as conn:
            return conn.execute(self.statements[name], params).fetchall()

    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        """``work(session)`` in one transaction on one pooled connection; never retried."""
        with self._connection() as conn, conn.transaction():
            return work(PostgreSQLSession(conn, self.statements))

    def close(self) -> None:
        """Close the pool (waiting briefly for borrowed connections). Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()

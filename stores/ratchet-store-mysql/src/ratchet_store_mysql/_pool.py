"""The connection plumbing every store operation goes through.

A small thread-safe pool of PyMySQL connections of our own (PyMySQL has none):

* Connections open lazily, at most ``max_size`` at once; a call waits up to ``timeout``
  seconds for a free one, then raises :class:`~ratchet.errors.StoreUnavailableError`.
* Idle connections are kept last-in first-out, so a quiet store keeps few warm ones.
* Before an idle connection is handed out, its socket is polled (no round trip): a server
  that closed it (``KILL``, restart, ``wait_timeout``) leaves it readable, and it is
  replaced by a fresh one. So after a restart or a kill the next call normally just works.
* A connection that fails in use is discarded, with every idle one (after a restart they
  are all dead); the call raises :class:`ratchet.spi.ConnectionLostError` (a
  StoreUnavailableError) with the password redacted.
* Idempotent calls (reads; enqueues, which carry their job ids) that lose their connection
  in use are run once more (:func:`ratchet.spi.run_idempotent`): the idle connections
  were just discarded, so the retry runs on a fresh (or just used) connection. This covers
  a server hang-up the poll could not see yet. Claims and fenced outcome writes are not
  retried here: the server may have applied them before the answer was lost, and only the
  engine can read back what happened.

Each connection is in autocommit mode (one statement, one transaction) with the session set
to UTC and strict SQL, and with the ``CLIENT.FOUND_ROWS`` flag (see :func:`connect`).
"""

from __future__ import annotations

import contextlib
import select
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import pymysql
from pymysql.connections import Connection
from pymysql.constants import CLIENT
from pymysql.cursors import Cursor

from ratchet.errors import RatchetError, StoreUnavailableError
from ratchet.spi import ConnectionLostError, get_logger, redact, run_idempotent
from ratchet_store_mysql._url import ConnectionSettings, IsolationLevel, parse_store_url

__all__ = [
    "ConnectionLostError",
    "ConnectionPool",
    "PooledStore",
    "connect",
    "is_lock_conflict",
    "is_transport_error",
    "rollback_quietly",
    "run_with_retries",
]

log = get_logger("ratchet.stores.mysql")

# Server errors that mean "this connection or the server cannot be used", not "the
# statement was wrong": too many connections, access denied, unknown database, shutdown
# in progress, host blocked, aborted connection, connection killed (MariaDB), disconnected
# for inactivity (MySQL 8.0.24+). Client-side errors (2000-2999: cannot connect, server gone
# away, lost connection, ...) are transport errors too.
_TRANSPORT_ERRNOS = frozenset({1040, 1045, 1049, 1053, 1129, 1152, 1927, 4031})

# InnoDB gave up a lock wait: deadlock (the whole transaction was rolled back) or lock wait
# timeout (the statement was). Either way the transaction can be run again from the start.
LOCK_CONFLICT_ERRNOS = frozenset({1205, 1213})

# Strict mode: a value that does not fit is an error, never silently truncated.
_SQL_MODE = "STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION"


def _errno(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection (or the server) is gone or unusable."""
    if isinstance(exc, pymysql.err.InterfaceError):
        return True
    if isinstance(exc, pymysql.err.OperationalError | pymysql.err.InternalError):
        errno = _errno(exc)
        return errno is not None and (2000 <= errno < 3000 or errno in _TRANSPORT_ERRNOS)
    return False


def is_lock_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a deadlock or lock wait timeout (the transaction can be rerun)."""
    return isinstance(exc, pymysql.err.MySQLError) and _errno(exc) in LOCK_CONFLICT_ERRNOS


def connect(settings: ConnectionSettings) -> Connection[Any]:
    """A new configured connection.

    ``CLIENT.FOUND_ROWS``: without it MySQL reports *changed* rows, so an UPDATE whose
    WHERE matched a row but whose SET happened to leave every column as it was counts 0.
    A fenced write ("WHERE id = ? AND status = 'RUNNING' AND claim_seq = ?") decides its
    answer from that count; a re-acquired lock or a late outcome recorded twice within one
    microsecond would look stale when it was not. With the flag the count is *matched* rows.
    """
    conn: Connection[Any] = pymysql.connect(
        **settings.connect_kwargs,
        charset="utf8mb4",
        client_flag=CLIENT.FOUND_ROWS,
        autocommit=True,
        program_name="ratchet",
    )
    try:
        with conn.cursor() as cursor:
            # Times are DATETIME(6) in UTC written from UTC_TIMESTAMP(6); the session zone
            # only matters for NOW() and TIMESTAMP values, and is UTC too.
            cursor.execute("SET time_zone = '+00:00', sql_mode = %s", (_SQL_MODE,))
            if settings.isolation_level is not IsolationLevel.SERVER_DEFAULT:
                # Not tx_isolation / transaction_isolation: their name differs between
                # MariaDB 10.x and MySQL 8, this statement does not.
                cursor.execute(
                    f"SET SESSION TRANSACTION ISOLATION LEVEL {settings.isolation_level.value}"
                )
    except BaseException:
        conn.close()
        raise
    return conn


def _is_quiet(conn: Connection[Any]) -> bool:
    """Whether an idle connection is still open: nothing to read on its socket.

    An idle connection is never sent anything by a healthy server, so a readable socket
    means the server closed it (EOF) or sent its last error packet before closing.
    ``poll`` where available: ``select`` refuses descriptors above ``FD_SETSIZE`` (1024),
    which would make every connection look dead in a process with many open files.
    """
    sock = getattr(conn, "_sock", None)  # PyMySQL has no public accessor for it
    if sock is None:
        return False
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return not poller.poll(0)
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class ConnectionPool:
    """At most ``max_size`` connections on one database, shared by a store's threads."""

    def __init__(self, settings: ConnectionSettings, *, max_size: int, timeout: float) -> None:
        self._settings = settings
        self._timeout = timeout
        self._slots = threading.BoundedSemaphore(max(1, max_size))
        self._idle: list[Connection[Any]] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Connection[Any]]:
        """Borrow a live connection; transport failures become StoreUnavailableError
        (:class:`ConnectionLostError` when the connection broke in use)."""
        display = self._settings.display
        if self._closed:
            raise RatchetError(f"The store {display} is closed.")
        if not self._slots.acquire(timeout=self._timeout):
            raise StoreUnavailableError(
                f"MySQL store {display} had no free connection within {self._timeout} s; "
                "raise pool_max_size or pool_timeout, or make fewer calls at once."
            )
        conn: Connection[Any] | None = None
        try:
            conn = self._take()
            yield conn
        except BaseException as exc:
            if conn is not None and not isinstance(exc, Exception):
                # Interrupted (KeyboardInterrupt, ...) maybe mid-reply: the protocol state
                # is unknown, so the connection is not reused.
                self._discard(conn)
                conn = None
            lost = False
            if conn is not None and is_transport_error(exc):
                lost = True  # it broke in use: the call may be retried on a fresh one
                self._discard(conn)
                conn = None
                self.discard_idle()
            if is_transport_error(exc):
                error = ConnectionLostError if lost else StoreUnavailableError
                raise error(f"MySQL store {display} is unavailable: {redact(str(exc))}") from exc
            raise
        finally:
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    def _take(self) -> Connection[Any]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return connect(self._settings)
            if _is_quiet(conn):
                return conn
            log.debug("dropping a connection to %s that the server closed", self._settings.display)
            self._discard(conn)

    def _give_back(self, conn: Connection[Any]) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        self._discard(conn)

    @staticmethod
    def _discard(conn: Connection[Any]) -> None:
        # close() sends COM_QUIT when it can and always closes the socket; it only raises
        # for a connection that is already closed.
        with contextlib.suppress(pymysql.err.Error):
            conn.close()

    def discard_idle(self) -> None:
        """Close every idle connection (after a failure they are probably dead too)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            self._discard(conn)

    def close(self) -> None:
        """Close idle connections now and borrowed ones when they come back. Idempotent."""
        self._closed = True
        self.discard_idle()


def run_with_retries(
    attempt: Callable[[], Any], *, on_conflict: Callable[[BaseException], None], tries: int = 4
) -> Any:
    """Call ``attempt`` until it does not fail with a lock conflict (at most ``tries``)."""
    for remaining in range(tries - 1, -1, -1):
        try:
            return attempt()
        except pymysql.err.MySQLError as exc:
            if remaining == 0 or not is_lock_conflict(exc):
                raise
            on_conflict(exc)
    raise AssertionError("unreachable")  # pragma: no cover


def rollback_quietly(conn: Connection[Any]) -> None:
    """Roll back after a failure. A broken connection is discarded by the pool anyway, so a
    rollback that fails too must not hide the original error."""
    with contextlib.suppress(pymysql.err.Error, OSError):
        conn.rollback()


T = TypeVar("T")


class PooledStore:
    """A pool on one MySQL database, and helpers to run SQL text and transactions on it
    (the store maps the shared layer's statement names onto them).

    Lock conflicts (a deadlock, or a lock wait timeout) are retried from the start a few
    times, since InnoDB already rolled the work back; :attr:`lock_conflict_retries` counts
    them (the concurrency tests assert that it stays 0). Other errors propagate.
    """

    def __init__(self, url: str, *, pool_max_size: int = 10, pool_timeout: float = 10.0) -> None:
        """Parse ``url`` (raises InvalidStoreURLError); no connection is opened yet."""
        self._settings = parse_store_url(url)
        self._display = self._settings.display
        self._pool = ConnectionPool(self._settings, max_size=pool_max_size, timeout=pool_timeout)
        self._conflicts = 0
        self._conflicts_lock = threading.Lock()

    def describe(self) -> str:
        """``mysql://user@host:port/dbname``: never the password or the query string."""
        return self._display

    @property
    def isolation_level(self) -> IsolationLevel:
        """The isolation level of the store's own connections."""
        return self._settings.isolation_level

    @property
    def lock_conflict_retries(self) -> int:
        """Transactions run again after a deadlock or lock wait timeout, since opening."""
        return self._conflicts

    def _count_conflict(self, exc: BaseException) -> None:
        with self._conflicts_lock:
            self._conflicts += 1
        log.warning("MySQL store %s: lock conflict, running again: %s", self._display, exc)

    def _connection(self) -> AbstractContextManager[Connection[Any]]:
        return self._pool.connection()

    def _with_connection(
        self, work: Callable[[Connection[Any]], T], *, idempotent: bool = False
    ) -> T:
        """``work(conn)`` on a pooled connection, run again after a lock conflict, and
        with ``idempotent`` (``work`` may run twice with the same effect and answer) once
        more after a lost connection."""

        def attempt() -> T:
            with self._pool.connection() as conn:
                return work(conn)

        def run(_retry: bool) -> T:
            result: T = run_with_retries(attempt, on_conflict=self._count_conflict)
            return result

        return run_idempotent(run, log=log, store=self._display) if idempotent else run(False)

    def _in_transaction(self, work: Callable[[Cursor], T]) -> T:
        """``work(cursor)`` in one transaction, committed when it returns (not retried
        after a lost connection: the commit may have happened)."""

        def run(conn: Connection[Any]) -> T:
            conn.begin()
            try:
                with conn.cursor() as cursor:
                    result = work(cursor)
                conn.commit()
            except BaseException:
                rollback_quietly(conn)
                raise
            return result

        return self._with_connection(run)

    def _execute(self, statement: str, params: Any = None, *, idempotent: bool = False) -> int:
        """Run one statement (its own transaction); returns the matched row count.

        ``idempotent``: the statement may run twice with the same effect and answer, so a
        lost connection retries it once.
        """

        def run(conn: Connection[Any]) -> int:
            with conn.cursor() as cursor:
                return int(cursor.execute(statement, params))

        return self._with_connection(run, idempotent=idempotent)

    def _one(
        self, statement: str, params: Any = None, *, idempotent: bool = False
    ) -> tuple[Any, ...] | None:
        """The first row of one statement; ``idempotent`` as for :meth:`_execute`."""

        def run(conn: Connection[Any]) -> tuple[Any, ...] | None:
            with conn.cursor() as cursor:
                cursor.execute(statement, params)
                row: tuple[Any, ...] | None = cursor.fetchone()
                return row

        return self._with_connection(run, idempotent=idempotent)

    def _all(
        self, statement: str, params: Any = None, *, idempotent: bool = False
    ) -> list[tuple[Any, ...]]:
        """Every row of one statement; ``idempotent`` as for :meth:`_execute`."""

        def run(conn: Connection[Any]) -> list[tuple[Any, ...]]:
            with conn.cursor() as cursor:
                cursor.execute(statement, params)
                return list(cursor.fetchall())

        return self._with_connection(run, idempotent=idempotent)

    def close(self) -> None:
        """Close the pool's connections. Idempotent."""
        self._pool.close()

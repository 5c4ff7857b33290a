"""Async enqueue (``ratchet.spi.SupportsAsyncEnqueue``) on psycopg's async pool.

The statements, their parameters, the COPY rows, the NOTIFY hint and the conflict lookups
are the sync path's own plans (:mod:`ratchet_store_postgresql._enqueue`), driven here on a
``psycopg.AsyncConnection``: the caller's event loop awaits the server instead of a thread
waiting for it.

A ``psycopg_pool.AsyncConnectionPool`` belongs to the loop that opened it (its lock, its
workers and its connections' sockets are that loop's), so :class:`AsyncPools` keeps one
per running loop, opened on that loop's first enqueue, which waits until its connections
are ready. Its size is fixed (the sync pool's maximum): a pool that grows connects in its
background tasks, and a loop that ends (``asyncio.run`` returning) while one of them is
connecting never finishes shutting down, because the pool swallows that task's
cancellation. A fixed pool connects only while it opens and when it replaces a connection
that broke or was given back mid-statement (a caller cancelled during its insert): a loop
ending at that very moment still hangs, which ``aclose()`` before the loop ends avoids.

``aclose()`` closes the running loop's pool on it; ``close()`` closes each pool on its own
loop (waiting for it when that loop runs in another thread, scheduling it when it is the
caller's). The connections of a
loop that has since been closed cannot be closed through their pool any more: they are
closed directly, when the store closes or the next pool is opened.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool

from ratchet.errors import RatchetError, StoreUnavailableError
from ratchet.spi import ConnectionLostError, NewJob, get_logger, redact
from ratchet_store_postgresql._enqueue import (
    COPY_JOB_TYPES,
    CopyRows,
    Hint,
    Plan,
    conflict_plan,
    insert_plan,
    needs_transaction,
    stored_plan,
)
from ratchet_store_postgresql._pool import _server_closed
from ratchet_store_postgresql._statements import STATEMENTS

__all__ = ["AsyncPools", "insert_pooled_async", "run_plan_async"]

log = get_logger("ratchet.stores.postgresql")

AsyncConnection = psycopg.AsyncConnection[Any]
T = TypeVar("T")

_TRANSPORT_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
_CLOSE_TIMEOUT = 10.0
"""Seconds ``close()`` waits for a pool closing on another thread's loop."""


async def run_plan_async(conn: AsyncConnection, plan: Plan[T]) -> T:
    """:func:`~ratchet_store_postgresql._enqueue.run_plan` on an async connection."""
    answer: Any = None
    while True:
        try:
            step = plan.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        if isinstance(step, CopyRows):
            async with conn.cursor() as cursor, cursor.copy(STATEMENTS["copy_jobs"]) as copy:
                copy.set_types(COPY_JOB_TYPES)
                for row in step.rows:
                    await copy.write_row(row)
            answer = None
        else:
            cursor = await conn.execute(step.statement, step.params)
            answer = await cursor.fetchone() if step.fetch else None


async def insert_pooled_async(
    conn: AsyncConnection, jobs: Sequence[NewJob], hint: Hint | None, *, retry: bool
) -> None:
    """:func:`~ratchet_store_postgresql._enqueue.insert_pooled` on an autocommit async
    connection: all-or-nothing, committed, key conflicts as Ratchet errors, and a retry's
    conflict with its own lost first attempt counted as success."""
    try:
        if not needs_transaction(jobs):
            await run_plan_async(conn, insert_plan(jobs, hint))  # one statement: atomic
        else:
            async with conn.transaction():
                await run_plan_async(conn, insert_plan(jobs, hint))
    except pg_errors.UniqueViolation as exc:
        if retry and await run_plan_async(conn, stored_plan(jobs)):
            return
        error = await run_plan_async(conn, conflict_plan(jobs, exc))
        raise (error or exc) from exc


@dataclass(slots=True)
class _LoopPool:
    pool: AsyncConnectionPool[AsyncConnection]
    connections: weakref.WeakSet[AsyncConnection] = field(default_factory=weakref.WeakSet)
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    ready: bool = False  # every connection was made once (the first use waited for them)

    def finish_connections(self) -> None:
        """Close the sockets directly: for a pool whose loop can no longer run it."""
        for conn in list(self.connections):
            if not conn.closed:
                conn.pgconn.finish()


class AsyncPools:
    """One ``AsyncConnectionPool`` of ``size`` autocommit connections (a fixed size: see the
    module docstring) per running event loop, on the store's database."""

    def __init__(self, conninfo: str, display: str, *, size: int, timeout: float) -> None:
        self._conninfo = conninfo
        self._display = display
        self._size = max(1, size)
        self._timeout = timeout
        self._pools: dict[asyncio.AbstractEventLoop, _LoopPool] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._closing: set[asyncio.Task[None]] = set()  # closes scheduled on the caller's loop

    def requests(self) -> int:
        """Connections handed out so far by the pools still open (every loop's)."""
        with self._lock:
            pools = [entry.pool for entry in self._pools.values()]
        return sum(pool.get_stats().get("requests_num", 0) for pool in pools)

    async def insert(self, jobs: Sequence[NewJob], hint: Hint | None) -> None:
        """Insert ``jobs`` (checked, at least one) all-or-nothing on the running loop's
        pool; retried once when the connection is lost (the job ids tell a first attempt
        that was committed before its answer was lost)."""
        for retry in (False, True):
            try:
                async with self._connection() as conn:
                    await insert_pooled_async(conn, jobs, hint, retry=retry)
                return
            except ConnectionLostError as exc:
                if retry:
                    raise
                log.info("store %s: connection lost, retrying once: %s", self._display, exc)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection]:
        """A live connection of the running loop's pool, transport failures raised as in
        :meth:`ratchet_store_postgresql._pool.PooledStore._connection`."""
        borrowed: AsyncConnection | None = None
        pool: AsyncConnectionPool[AsyncConnection] | None = None
        try:
            pool = await self._pool()
            async with self._live_connection(pool) as conn:
                borrowed = conn
                yield conn
        except _TRANSPORT_ERRORS as exc:
            lost = borrowed is not None and (borrowed.broken or borrowed.closed)
            if pool is not None and (borrowed is None or lost):
                try:
                    await pool.check()  # the server probably dropped the idle ones too
                except Exception as check_error:
                    log.debug("checking the async pool failed: %s", redact(str(check_error)))
            error = ConnectionLostError if lost else StoreUnavailableError
            raise error(
                f"PostgreSQL store {self._display} is unavailable: {redact(str(exc))}"
            ) from exc

    @asynccontextmanager
    async def _live_connection(
        self, pool: AsyncConnectionPool[AsyncConnection]
    ) -> AsyncIterator[AsyncConnection]:
        """A pooled connection the server has not hung up on (bounded, as the sync pool's)."""
        for remaining in range(pool.max_size, -1, -1):
            async with pool.connection() as conn:
                if remaining and _server_closed(conn):  # the sync pool's check
                    await conn.close()
                    continue
                yield conn
                return

    async def _pool(self) -> AsyncConnectionPool[AsyncConnection]:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise RatchetError(f"The store {self._display} is closed.")
            entry = self._pools.get(loop)
            if entry is None:
                for stale in [old for old in self._pools if old.is_closed()]:
                    self._pools.pop(stale).finish_connections()
                entry = self._pools[loop] = self._new_pool()
        if not entry.ready:
            # One opener per pool: psycopg_pool refuses concurrent waits for the same fill.
            async with entry.opening:
                if not entry.ready:
                    await self._open(loop, entry)
        return entry.pool

    async def _open(self, loop: asyncio.AbstractEventLoop, entry: _LoopPool) -> None:
        try:
            await entry.pool.open(wait=True, timeout=self._timeout)
        except BaseException:
            # A pool that timed out has closed itself: the next call opens a new one.
            with self._lock:
                if self._pools.get(loop) is entry:
                    del self._pools[loop]
            await entry.pool.close()
            raise
        entry.ready = True

    def _new_pool(self) -> _LoopPool:
        connections: weakref.WeakSet[AsyncConnection] = weakref.WeakSet()

        async def configure(conn: AsyncConnection) -> None:
            await conn.execute("SET TIME ZONE 'UTC'")
            connections.add(conn)

        pool: AsyncConnectionPool[AsyncConnection] = AsyncConnectionPool(
            self._conninfo,
            kwargs={"autocommit": True},
            min_size=self._size,  # fixed: see the module docstring
            max_size=self._size,
            timeout=self._timeout,
            configure=configure,
            name=f"ratchet-async-{self._display}",
            open=False,
        )
        return _LoopPool(pool, connections)

    async def aclose(self) -> None:
        """Close the running loop's pool on it, then every other as :meth:`close` does."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._pools.pop(loop, None)
        if entry is not None:
            await entry.pool.close()
        self.close()

    def close(self) -> None:
        """Close every pool on its own loop; idempotent. A pool of the caller's running
        loop is closed by a task scheduled on it (``aclose()`` awaits it instead)."""
        with self._lock:
            self._closed = True
            entries, self._pools = list(self._pools.items()), {}
        for loop, entry in entries:
            self._close_on(loop, entry)

    def _close_on(self, loop: asyncio.AbstractEventLoop, entry: _LoopPool) -> None:
        if loop.is_closed() or not loop.is_running():
            entry.finish_connections()  # nothing runs the pool's workers any more
            return
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop:
            task = loop.create_task(entry.pool.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            return
        closing = asyncio.run_coroutine_threadsafe(entry.pool.close(), loop)
        try:
            closing.result(_CLOSE_TIMEOUT)
        except Exception as exc:  # the loop is stopping or stuck: do not hang close()
            log.debug("closing an async pool of %s failed: %s", self._display, exc)
            entry.finish_connections()

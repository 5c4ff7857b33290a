"""PostgreSQLClusterCoordinator: wakeup hints with LISTEN/NOTIFY.

A dedicated autocommit connection LISTENs on the channel. On the store's own database the
store sends each enqueue's hint in the insert's transaction (``SupportsEnqueueHints``);
other hints are sent with ``pg_notify`` on a second connection. NOTIFY is delivered to
listeners connected at the time it is committed, which fits hints: a node that misses one
still polls. When the listening connection breaks (server restart,
``pg_terminate_backend``) the thread reconnects with full-jitter exponential backoff (0.2 s
to 30 s) and then wakes the local poller once (``resync``), because notifications sent
meanwhile are lost. The listening thread sleeps in ``select`` on the connection's socket
and on a wake-up pipe of its own, so :meth:`close` interrupts it at once instead of
waiting for a polling tick.
"""

from __future__ import annotations

import os
import re
import select
import threading
from typing import Any

import psycopg
from psycopg import sql

from ratchet import RatchetOptions
from ratchet.errors import ConfigurationError
from ratchet.spi import (
    BroadcastClusterCoordinator,
    ReconnectBackoff,
    SupportsEnqueueHints,
    encode_envelope,
    get_logger,
    redact,
)
from ratchet_coordinator_pg._config import DEFAULT_CHANNEL, PostgreSQLSettings
from ratchet_coordinator_pg._plugin import uses_store_database

__all__ = ["DEFAULT_CHANNEL", "PostgreSQLClusterCoordinator"]

log = get_logger("ratchet.coordinator.pg")

MAX_PAYLOAD_BYTES = 7999  # PostgreSQL's NOTIFY payload limit is 8000 bytes
LISTEN_WAKE_SECONDS = 5.0
_CHANNEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class PostgreSQLClusterCoordinator(BroadcastClusterCoordinator):
    """Hints through ``NOTIFY channel`` on the PostgreSQL server of ``conninfo``.

    The listening connection is made in the background, by the same loop that reconnects
    it. The constructor waits up to ``ready_timeout`` seconds for it (0: not at all; the
    plugin factory passes 0, so ``Ratchet()`` never waits for a server that may be down);
    :attr:`ready` and :meth:`wait_until_ready` tell whether it is listening.
    """

    def __init__(
        self,
        conninfo: str,
        node_id: str,
        *,
        channel: str = DEFAULT_CHANNEL,
        ready_timeout: float = 10.0,
    ) -> None:
        if not _CHANNEL.fullmatch(channel):
            raise ValueError(
                f"LISTEN/NOTIFY channel {channel!r} must be a plain identifier "
                "(letters, digits, underscores; at most 63 characters)."
            )
        super().__init__(node_id)
        self.channel = channel
        self._conninfo = conninfo
        self._where = redact(conninfo)
        self._application_name = f"ratchet-listen-{node_id}"[:63]
        self._sender_name = f"ratchet-notify-{node_id}"[:63]
        self._send_lock = threading.Lock()
        self._sender: psycopg.Connection[Any] | None = None
        self._stop = threading.Event()
        self._listening = threading.Event()
        # Written once by close(): wakes the listening thread out of select().
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(
            target=self._listen, name=f"ratchet-pg-listen-{node_id}", daemon=True
        )
        self._thread.start()
        if ready_timeout > 0 and not self._listening.wait(ready_timeout):
            log.warning(
                "LISTEN/NOTIFY coordinator is not listening yet; it keeps trying and nodes "
                "poll meanwhile."
            )

    @classmethod
    def for_store(
        cls, options: RatchetOptions, store: Any, node_id: str
    ) -> PostgreSQLClusterCoordinator:
        """The plugin factory: ``RATCHET_PG_COORDINATOR_URL`` if set in the node's options,
        else the store's own database; channel ``RATCHET_PG_CHANNEL`` (default
        ``ratchet_wakeup``), as :class:`PostgreSQLSettings` built once here. Returns at
        once; the listening connection is made in the background."""
        settings = PostgreSQLSettings.from_options(options)
        url, channel = settings.url, settings.channel
        if not url and not uses_store_database(store):
            described = store.describe() if hasattr(store, "describe") else type(store).__name__
            raise ConfigurationError(
                f"The LISTEN/NOTIFY coordinator needs a PostgreSQL database, and the store "
                f"{described} is not one. Use a postgresql:// store, or set "
                "RATCHET_PG_COORDINATOR_URL to a PostgreSQL server's URL."
            )
        # The libpq URL form: drop a driver suffix such as "postgresql+psycopg".
        conninfo = "postgresql://" + url.partition("://")[2] if url else store.conninfo
        coordinator = cls(conninfo, node_id, channel=channel, ready_timeout=0)
        if not url and isinstance(store, SupportsEnqueueHints):
            # Same database: the hint rides in the enqueue's own transaction (delivered at
            # commit, no second round trip, never for a rolled-back insert).
            store.send_hints_with_enqueue(
                channel, lambda priority: encode_envelope(priority, node_id, None)
            )
            coordinator.store_sends_enqueue_hints = True
        return coordinator

    @property
    def ready(self) -> bool:
        """LISTENing right now."""
        return self._listening.is_set()

    def wait_until_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the LISTEN; whether it is in place."""
        return self._listening.wait(timeout)

    @property
    def application_names(self) -> tuple[str, str]:
        """``application_name`` of the listening and the sending connection (to find them
        in ``pg_stat_activity``)."""
        return self._application_name, self._sender_name

    def publish(self, payload: str) -> None:
        if len(payload.encode()) > MAX_PAYLOAD_BYTES:
            raise ValueError("wakeup envelope exceeds the NOTIFY payload limit")
        with self._send_lock:
            try:
                if self._sender is None or self._sender.closed:
                    self._sender = psycopg.connect(
                        self._conninfo,
                        autocommit=True,
                        connect_timeout=5,
                        application_name=self._sender_name,
                    )
                self._sender.execute("SELECT pg_notify(%s, %s)", (self.channel, payload))
            except psycopg.Error:
                if self._sender is not None:
                    self._sender.close()
                self._sender = None
                raise

    def close_transport(self) -> None:
        self._stop.set()
        os.write(self._wake_write, b"x")
        self._thread.join(timeout=5)
        os.close(self._wake_write)
        if not self._thread.is_alive():  # else the thread may still select() on it
            os.close(self._wake_read)
        with self._send_lock:
            if self._sender is not None:
                self._sender.close()
                self._sender = None

    def _listen(self) -> None:
        backoff = ReconnectBackoff()
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self._conninfo,
                    autocommit=True,
                    connect_timeout=5,
                    application_name=self._application_name,
                    keepalives=1,
                    keepalives_idle=10,
                ) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self._listening.set()
                    if backoff.succeeded():
                        log.info("LISTEN/NOTIFY coordinator reconnected.")
                        self.resync()
                    while not self._stop.is_set():
                        # Read first: a notification may already wait in the buffer.
                        for notify in conn.notifies(timeout=0):
                            self.deliver(notify.payload)
                        self._wait_readable(conn)
            except (psycopg.Error, OSError) as exc:
                self._listening.clear()
                wait = backoff.failed()
                level = backoff.log_level()
                if level is not None:
                    log.log(
                        level,
                        "LISTEN/NOTIFY connection lost (%s); reconnecting (attempt %d).",
                        redact(str(exc)).strip(),
                        backoff.failures,
                    )
                self._stop.wait(wait)
        self._listening.clear()

    def _wait_readable(self, conn: psycopg.Connection[Any]) -> None:
        """Sleep until the server sends something (a notification, or the end of a
        broken connection, which the next read raises) or :meth:`close` wakes us. The
        timeout only bounds how long a silently dead peer goes unnoticed between the
        keepalives."""
        select.select([conn.fileno(), self._wake_read], [], [], LISTEN_WAKE_SECONDS)

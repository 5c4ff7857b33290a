"""JmsClusterCoordinator: wakeup hints on a JMS topic, spoken over the broker's STOMP endpoint.

One background thread owns the connection. It opens a STOMP 1.2 connection (with
heart-beats), subscribes to the topic with a JMS selector that drops this node's own hints
at the broker, and waits for the broker's RECEIPT of that subscription before it counts as
ready. When the connection ends (socket closed, missed heart-beats, an ERROR frame) it
reconnects with full-jitter exponential backoff, subscribes again, and then wakes the local
poller once (:meth:`~ratchet.spi.BroadcastClusterCoordinator.resync`), because hints
published meanwhile are lost: topics keep nothing for absent subscribers.

Each connection gets its own stomp.py ``Connection`` and listener object, so nothing from a
dead connection can leak into the next one.
"""

from __future__ import annotations

import atexit
import logging
import random
import threading
import time
import uuid
from typing import Any

import stomp  # type: ignore[import-untyped]  # stomp.py ships no type information

from ratchet import RatchetOptions
from ratchet.spi import BroadcastClusterCoordinator, get_logger, redact
from ratchet_coordinator_jms._config import (
    DEFAULT_DESTINATION,
    NODE_HEADER,
    BrokerAddress,
    JmsSettings,
    parse_url,
    self_filter_selector,
)

__all__ = ["JmsClusterCoordinator"]

log = get_logger("ratchet.coordinator.jms")

SUBSCRIPTION_ID = "ratchet-wakeup"
BACKOFF_START = 0.2
STABLE_SECONDS = 10.0
"""A connection that lived this long resets the backoff; shorter ones keep growing it."""
ERROR_AFTER_FAILURES = 10
CLOSE_GRACE_SECONDS = 2.0


class _Session:
    """Listener of one STOMP connection. stomp.py calls ``on_<frame>`` methods by name on its
    receiver thread (duck typing: no base class needed)."""

    def __init__(self, owner: JmsClusterCoordinator, connection: Any, receipt_id: str) -> None:
        self.owner = owner
        self.connection = connection
        self.receipt_id = receipt_id
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.ended = threading.Event()
        self.disconnected = threading.Event()
        self.current = True
        self.reason = "the connection closed"

    def on_connected(self, _frame: Any) -> None:
        # The socket was opened with the connect timeout; from here on heart-beats (and TCP
        # keepalive) decide whether the broker is alive, so reads must not time out.
        sock = getattr(self.connection.transport, "socket", None)
        if sock is not None:
            sock.settimeout(None)
        self.connected.set()

    def on_receipt(self, frame: Any) -> None:
        if frame.headers.get("receipt-id") == self.receipt_id:
            self.subscribed.set()

    def on_error(self, frame: Any) -> None:
        message = frame.headers.get("message") or str(frame.body or "").strip() or "no detail"
        self.end(f"the broker sent an ERROR frame: {redact(str(message))}")

    def on_heartbeat_timeout(self) -> None:
        self.end("no heart-beat from the broker in time")

    def on_disconnected(self) -> None:
        self.disconnected.set()
        self.end("the connection closed")

    def on_message(self, frame: Any) -> None:
        if self.current:
            self.owner.deliver(frame.body)

    def end(self, reason: str) -> None:
        if not self.ended.is_set():
            self.reason = reason
            self.ended.set()

    def wait(self, event: threading.Event, timeout: float, stop: threading.Event) -> bool:
        """Wait for ``event``; give up early when the connection ends or the owner stops."""
        deadline = time.monotonic() + timeout
        while not event.wait(0.02):
            if self.ended.is_set() or stop.is_set() or time.monotonic() >= deadline:
                return event.is_set()
        return True


class JmsClusterCoordinator(BroadcastClusterCoordinator):
    """Publishes hints to a JMS topic over STOMP and delivers what it receives there.

    ``url`` is ``stomp://[user[:password]@]host[:port]``. The connection thread subscribes
    in the background. The constructor waits until the subscription is confirmed by a
    RECEIPT, for at most ``ready_timeout`` seconds (default: ``connect_timeout_seconds``),
    then warns and returns (the thread keeps trying and nodes poll meanwhile);
    :attr:`ready` tells which. The plugin factory passes ``ready_timeout=0``, so
    ``Ratchet()`` never waits for a broker that may be down. A hint published before the
    first connection counts as a transport failure, as any hint that cannot be sent, but
    the latest one is kept and sent once subscribed.
    """

    def __init__(
        self,
        url: str,
        node_id: str,
        *,
        destination: str = DEFAULT_DESTINATION,
        selector: bool = True,
        heartbeat_seconds: float = 10.0,
        connect_timeout_seconds: float = 10.0,
        reconnect_max_seconds: float = 30.0,
        ready_timeout: float | None = None,
    ) -> None:
        super().__init__(node_id)
        self.address: BrokerAddress = parse_url(url)
        self.destination = destination
        self.selector = selector
        self._where = redact(url)
        self._heartbeat_ms = round(heartbeat_seconds * 1000)
        self._connect_timeout = connect_timeout_seconds
        self._reconnect_max = max(reconnect_max_seconds, BACKOFF_START)
        self._state = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._connection: Any = None
        self._session: _Session | None = None
        self._held: str | None = None  # a hint published before the first connection
        self._first_attempt = threading.Event()  # set once the first attempt ended, either way
        self.connections_opened = 0
        """Connections that reached the subscribed state (1 + the number of reconnects)."""
        if not destination.startswith("/topic/"):
            log.warning(
                "JMS coordinator destination %r is not a /topic/: a queue would hand each "
                "hint to one node only.",
                destination,
            )
        self._thread = threading.Thread(
            target=self._run, name=f"ratchet-jms-{node_id}", daemon=True
        )
        self._thread.start()
        atexit.register(self._send_held_before_exit)
        wait = connect_timeout_seconds if ready_timeout is None else ready_timeout
        if wait > 0 and not self._ready.wait(wait):
            log.warning(
                "JMS coordinator on %s is not subscribed after %.1f s; it keeps trying and "
                "nodes poll meanwhile.",
                self._where,
                wait,
            )

    @classmethod
    def from_environment(
        cls, options: RatchetOptions, _store: Any, node_id: str
    ) -> JmsClusterCoordinator:
        """The plugin factory: ``RATCHET_JMS_*`` from the node's options (see the package
        README), as :class:`JmsSettings` built once here."""
        settings = JmsSettings.from_options(options)
        return cls(
            settings.url,
            node_id,
            destination=settings.destination,
            selector=settings.selector,
            heartbeat_seconds=settings.heartbeat_seconds,
            connect_timeout_seconds=settings.connect_timeout_seconds,
            reconnect_max_seconds=settings.reconnect_max_seconds,
            ready_timeout=0,
        )

    # -- state ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Connected and subscribed (the broker confirmed the subscription) right now."""
        return self._ready.is_set()

    def wait_until_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def __repr__(self) -> str:
        state = "ready" if self.ready else "closed" if self.closed else "connecting"
        return (
            f"<JmsClusterCoordinator {self._where} {self.destination} "
            f"node={self.node_id!r} {state}>"
        )

    # -- transport -----------------------------------------------------------------------

    def publish(self, payload: str) -> None:
        connection = self._connection
        if connection is None:
            with self._state:
                # Still making the first connection (nobody waits for it): keep the latest
                # hint for then, or a producer that enqueues at start would lose it.
                first = self.connections_opened == 0 and not self._stop.is_set()
                if first:
                    self._held = payload
            raise ConnectionError(
                f"not connected to the broker at {self._where} yet; the latest hint is sent "
                "once subscribed"
                if first
                else f"not connected to the broker at {self._where} (reconnecting)"
            )
        connection.send(
            self.destination,
            payload,
            headers={NODE_HEADER: self.node_id, "persistent": "false"},
        )

    def close_transport(self) -> None:
        atexit.unregister(self._send_held_before_exit)
        self._send_held_before_exit()
        with self._state:
            self._stop.set()
            session = self._session
        if session is not None:
            session.end("closing")
        self._thread.join(timeout=CLOSE_GRACE_SECONDS + 3)

    # -- the connection thread -----------------------------------------------------------

    def _run(self) -> None:
        failures = 0  # consecutive attempts that did not give a stable connection
        while not self._stop.is_set():
            try:
                session = self._open()
            except Exception as exc:
                if self._stop.is_set():
                    return
                failures += 1
                self._first_attempt.set()
                self._log_failure(f"could not subscribe ({self._describe(exc)})", failures)
                self._backoff(failures)
                continue
            held = None
            with self._state:
                closing = self._stop.is_set()
                if not closing:
                    self._session = session
                    self._connection = session.connection
                    self.connections_opened += 1
                    held, self._held = self._held, None
                reconnected = self.connections_opened > 1
            if closing:  # close() ran while this connection was being opened
                session.current = False
                self._dispose(session, graceful=True)
                return
            if held is not None:
                self._send_held(held)
            self._ready.set()
            self._first_attempt.set()
            if reconnected:
                log.info("JMS coordinator re-subscribed on %s.", self._where)
                self.resync()  # hints sent while we were away are lost: poll once now
            elif failures:
                log.info("JMS coordinator subscribed on %s.", self._where)
            opened = time.monotonic()
            session.ended.wait()
            self._ready.clear()
            with self._state:
                self._session = None
                self._connection = None
                session.current = False
            stopping = self._stop.is_set()
            self._dispose(session, graceful=stopping)
            if stopping:
                return
            failures = 0 if time.monotonic() - opened >= STABLE_SECONDS else failures + 1
            self._log_failure(f"lost the connection ({session.reason})", max(failures, 1))
            if failures:
                self._backoff(failures)
            else:
                self._stop.wait(random.uniform(0, BACKOFF_START))  # spread a herd of nodes

    def _send_held_before_exit(self) -> None:
        """Closing, or the interpreter exiting (``ratchet enqueue``, a producer that enqueues
        and ends): a first connection attempt under way may still send the kept hint."""
        if self._held is not None and not self._stop.is_set():
            self._first_attempt.wait(CLOSE_GRACE_SECONDS)

    def _send_held(self, payload: str) -> None:
        try:
            self.publish(payload)
        except Exception as exc:
            log.warning("JMS coordinator could not send a hint kept since start-up: %s", exc)
            return
        self._count("sent")

    def _open(self) -> _Session:
        """Connect, log in, subscribe, and wait for the subscription's RECEIPT."""
        address = self.address
        timeout = self._connect_timeout
        connection = stomp.Connection12(
            [(address.host, address.port)],
            heartbeats=(self._heartbeat_ms, self._heartbeat_ms),
            reconnect_attempts_max=1,  # this thread does the retrying, with its own backoff
            reconnect_sleep_initial=0,
            reconnect_sleep_increase=0,
            reconnect_sleep_jitter=0,
            timeout=timeout,  # bounds the TCP connect and the wait for CONNECTED
            keepalive=True,
            auto_content_length=False,  # no content-length: JMS consumers see a TextMessage
        )
        session = _Session(self, connection, f"ratchet-subscribe-{uuid.uuid4().hex}")
        connection.set_listener("ratchet", session)
        try:
            connection.connect(address.login, address.passcode, wait=False)
            if not session.wait(session.connected, timeout, self._stop):
                raise TimeoutError(self._unless_ended(session, f"no CONNECTED within {timeout} s"))
            headers = {"receipt": session.receipt_id}
            if self.selector:
                headers["selector"] = self_filter_selector(self.node_id)
            connection.subscribe(self.destination, id=SUBSCRIPTION_ID, ack="auto", headers=headers)
            if not session.wait(session.subscribed, timeout, self._stop):
                raise TimeoutError(
                    self._unless_ended(
                        session, f"the broker did not confirm the subscription within {timeout} s"
                    )
                )
        except BaseException:
            session.current = False
            self._dispose(session, graceful=False)
            raise
        return session

    @staticmethod
    def _unless_ended(session: _Session, timed_out: str) -> str:
        return session.reason if session.ended.is_set() else timed_out

    def _dispose(self, session: _Session, *, graceful: bool) -> None:
        """Close one connection; politely (DISCONNECT) when the coordinator is closing."""
        connection = session.connection
        try:
            if graceful and connection.is_connected():
                connection.disconnect()  # the broker's RECEIPT makes stomp.py close the socket
                session.disconnected.wait(CLOSE_GRACE_SECONDS)
        except Exception:
            log.debug("DISCONNECT failed", exc_info=True)
        try:
            connection.transport.disconnect_socket()
        except Exception:
            log.debug("closing the STOMP socket failed", exc_info=True)

    def _backoff(self, failures: int) -> None:
        """Full jitter: sleep uniform(0, min(max, 0.2 s · 2^(failures-1)))."""
        ceiling = min(self._reconnect_max, BACKOFF_START * 2 ** min(failures - 1, 30))
        self._stop.wait(random.uniform(0, ceiling))

    def _log_failure(self, what: str, failures: int) -> None:
        if failures == 1 or failures % ERROR_AFTER_FAILURES == 0:
            level = logging.ERROR if failures >= ERROR_AFTER_FAILURES else logging.WARNING
            log.log(
                level,
                "JMS coordinator %s on %s; reconnecting with backoff (attempt %d). Nodes poll "
                "meanwhile.",
                what,
                self._where,
                failures,
            )

    @staticmethod
    def _describe(exc: BaseException) -> str:
        text = redact(str(exc))
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

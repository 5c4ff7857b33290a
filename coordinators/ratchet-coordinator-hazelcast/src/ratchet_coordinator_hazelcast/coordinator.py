"""HazelcastClusterCoordinator: wakeup hints on a plain Hazelcast ``ITopic``.

Each coordinator owns a hazelcast-python-client started asynchronously, so an unreachable
cluster never blocks the application for longer than the connect timeout. The client does
its own reconnecting (jittered exponential backoff here, forever) and re-registers the
topic listener on every new connection, also when the cluster restarted and lost every
registration. After each reconnection the coordinator wakes the local poller once
(:meth:`~ratchet.spi.BroadcastClusterCoordinator.resync`): hints published while this
client was away are not kept by an ``ITopic``.

Why a plain ``ITopic`` and not a reliable topic: see the package README.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from hazelcast.client import HazelcastClient
from hazelcast.lifecycle import LifecycleState
from hazelcast.proxy.base import TopicMessage
from hazelcast.proxy.topic import Topic

from ratchet import RatchetOptions
from ratchet.spi import BroadcastClusterCoordinator, get_logger
from ratchet_coordinator_hazelcast._config import (
    DEFAULT_CLUSTER_NAME,
    DEFAULT_TOPIC,
    HazelcastSettings,
)

__all__ = ["HazelcastClusterCoordinator"]

log = get_logger("ratchet.coordinator.hazelcast")

BACKOFF_START = 0.2
SUBSCRIBE_RETRY_SECONDS = 1.0


class HazelcastClusterCoordinator(BroadcastClusterCoordinator):
    """Publishes hints to an ``ITopic`` and delivers what its listener receives there.

    The client connects in the background. The constructor waits until it is connected
    and the topic listener is registered with the cluster, for at most ``ready_timeout``
    seconds (default: ``connect_timeout_seconds``), then warns and returns (the client
    keeps trying and nodes poll meanwhile); :attr:`ready` tells which. The plugin factory
    passes ``ready_timeout=0``, so ``Ratchet()`` never waits for a cluster that may be
    down. A hint published before the first subscription counts as a transport failure,
    as any hint that cannot be sent, but the latest one is kept and sent once subscribed.
    """

    def __init__(
        self,
        node_id: str,
        *,
        members: Sequence[str] = ("127.0.0.1:5701",),
        cluster_name: str = DEFAULT_CLUSTER_NAME,
        topic: str = DEFAULT_TOPIC,
        connect_timeout_seconds: float = 10.0,
        reconnect_max_seconds: float = 30.0,
        ready_timeout: float | None = None,
    ) -> None:
        super().__init__(node_id)
        self.members = tuple(members)
        self.cluster_name = cluster_name
        self.topic_name = topic
        self._where = f"cluster {cluster_name!r} at {', '.join(self.members)}"
        self._connected = threading.Event()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._unconfirmed = 0  # publishes sent and not yet acknowledged by the member
        self._confirmed = threading.Condition()
        self._state = threading.Lock()
        self._topic: Topic[str] | None = None
        self._held: str | None = None  # a hint published before the first subscription
        self._publish_failures = 0
        self.connections_opened = 0
        """Cluster connections made by the client (1 + the number of reconnects)."""
        self._client = HazelcastClient(
            cluster_members=list(self.members),
            cluster_name=cluster_name,
            client_name=f"ratchet-{node_id}",
            async_start=True,  # never block start-up on the cluster; ready is waited below
            reconnect_mode="ON",
            cluster_connect_timeout=-1,  # keep trying forever; polling covers the outage
            retry_initial_backoff=BACKOFF_START,
            retry_max_backoff=max(reconnect_max_seconds, BACKOFF_START),
            retry_multiplier=2.0,
            retry_jitter=0.5,
            invocation_timeout=10.0,  # a publish stuck in a dead connection gives up soon
            heartbeat_timeout=20.0,
            lifecycle_listeners=[self._on_lifecycle],
        )
        self._subscriber = threading.Thread(
            target=self._subscribe, name=f"ratchet-hazelcast-{node_id}", daemon=True
        )
        self._subscriber.start()
        wait = connect_timeout_seconds if ready_timeout is None else ready_timeout
        if wait > 0 and not self._ready.wait(wait):
            log.warning(
                "Hazelcast coordinator is not subscribed on %s after %.1f s; the client keeps "
                "trying and nodes poll meanwhile.",
                self._where,
                wait,
            )

    @classmethod
    def from_environment(
        cls, options: RatchetOptions, _store: Any, node_id: str
    ) -> HazelcastClusterCoordinator:
        """The plugin factory: ``RATCHET_HAZELCAST_*`` from the node's options (see the
        package README), as :class:`HazelcastSettings` built once here."""
        settings = HazelcastSettings.from_options(options)
        return cls(
            node_id,
            members=settings.members,
            cluster_name=settings.cluster_name,
            topic=settings.topic,
            connect_timeout_seconds=settings.connect_timeout_seconds,
            reconnect_max_seconds=settings.reconnect_max_seconds,
            ready_timeout=0,
        )

    # -- state ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Connected, with the topic listener registered."""
        return self._ready.is_set()

    def wait_until_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def __repr__(self) -> str:
        state = "ready" if self.ready else "closed" if self.closed else "connecting"
        return (
            f"<HazelcastClusterCoordinator {self._where} topic={self.topic_name!r} "
            f"node={self.node_id!r} {state}>"
        )

    # -- transport -----------------------------------------------------------------------

    def publish(self, payload: str) -> None:
        topic = self._topic
        if topic is None:
            with self._state:
                topic = self._topic
                # Still subscribing for the first time (nobody waits for it): keep the latest
                # hint for then, or a producer that enqueues at start would lose it.
                if topic is None and not self._stop.is_set():
                    self._held = payload
                    raise ConnectionError(
                        f"not connected to the Hazelcast {self._where} yet; the latest hint "
                        "is sent once subscribed"
                    )
        if topic is None or not self._connected.is_set():
            raise ConnectionError(f"not connected to the Hazelcast {self._where} (reconnecting)")
        # Asynchronous: notify_new_work runs on the enqueue path and must not wait for the
        # cluster. A publish lost in a connection that is just dying is logged below.
        with self._confirmed:
            self._unconfirmed += 1
        topic.publish(payload).add_done_callback(self._published)

    def close_transport(self) -> None:
        # Let the last hints reach the member first (bounded): a producer that enqueues and
        # exits at once would otherwise drop its final wakeup with the client.
        if self._held is not None:
            self._ready.wait(2.0)
        with self._confirmed:
            self._confirmed.wait_for(lambda: self._unconfirmed == 0, timeout=2.0)
        self._stop.set()
        self._ready.clear()
        self._client.shutdown()  # also removes the listener registrations
        self._subscriber.join(timeout=5)

    # -- callbacks -----------------------------------------------------------------------

    def _subscribe(self) -> None:
        """Create the topic proxy and register the listener once the client is connected.

        Runs once, on its own thread: both calls block on the cluster, which the client's
        reactor thread (where lifecycle events arrive) must never do. Later connections get
        the registration from the client itself.
        """
        while not self._stop.is_set() and self._client.lifecycle_service.is_running():
            if not self._connected.wait(0.1):
                continue
            try:
                topic: Topic[str] = self._client.get_topic(self.topic_name)
                topic.add_listener(self._on_message).result()
            except Exception as exc:
                if self._stop.is_set():
                    return
                log.warning(
                    "Hazelcast coordinator could not subscribe to topic %r (%s: %s); retrying.",
                    self.topic_name,
                    type(exc).__name__,
                    exc,
                )
                self._stop.wait(SUBSCRIBE_RETRY_SECONDS)
                continue
            with self._state:
                self._topic = topic
                held, self._held = self._held, None
            if held is not None:
                self._send_held(held)
            with self._state:
                if self._connected.is_set():
                    self._ready.set()
            return

    def _send_held(self, payload: str) -> None:
        try:
            self.publish(payload)
        except Exception as exc:
            log.warning("Hazelcast coordinator could not send a hint kept since start-up: %s", exc)
            return
        self._count("sent")

    def _on_lifecycle(self, state: str) -> None:
        if state == LifecycleState.CONNECTED:
            with self._state:
                self.connections_opened += 1
                reconnected = self.connections_opened > 1
                self._connected.set()
                if self._topic is not None:
                    self._ready.set()
            if reconnected and not self._stop.is_set():
                log.info("Hazelcast coordinator reconnected to %s.", self._where)
                self.resync()  # hints sent while we were away are lost: poll once now
        elif state == LifecycleState.DISCONNECTED:
            with self._state:
                self._connected.clear()
                self._ready.clear()
            if not self._stop.is_set():
                log.warning(
                    "Hazelcast coordinator lost %s; the client reconnects with backoff and "
                    "nodes poll meanwhile.",
                    self._where,
                )
        elif state == LifecycleState.SHUTDOWN and not self._stop.is_set():
            log.error(
                "The Hazelcast client of the coordinator shut itself down (see the "
                "'hazelcast' log above); no more wakeups on %s, nodes only poll. Restart the "
                "node after fixing the cluster configuration.",
                self._where,
            )

    def _on_message(self, message: TopicMessage[Any]) -> None:
        payload = message.message
        self.deliver(payload if isinstance(payload, str | bytes) else str(payload))

    def _published(self, future: Any) -> None:
        with self._confirmed:
            self._unconfirmed -= 1
            self._confirmed.notify_all()
        error = future.exception()
        if error is None:
            return
        with self._state:
            self._publish_failures += 1
            failures = self._publish_failures
        if failures == 1 or failures % 100 == 0:
            log.warning(
                "A wakeup published on %s was lost (%s: %s); nodes fall back to polling. "
                "(lost publish %d)",
                self._where,
                type(error).__name__,
                error,
                failures,
            )

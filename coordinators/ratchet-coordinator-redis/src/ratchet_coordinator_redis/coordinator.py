"""RedisClusterCoordinator: wakeup hints on a Redis pub/sub channel.

Pub/sub is fire-and-forget, which fits hints: a node that misses one still polls. A
dedicated thread holds the subscription; when the connection drops it reconnects with
full-jitter exponential backoff (0.2 s up to 30 s) and, once subscribed again, wakes the
local poller (``resync``), because hints published meanwhile are lost. The thread also
listens on a channel of its own node, on which :meth:`close` publishes once, so closing
interrupts its wait instead of waiting for the next 0.5 s tick.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import redis

from ratchet import RatchetOptions
from ratchet.spi import BroadcastClusterCoordinator, ReconnectBackoff, get_logger, redact
from ratchet_coordinator_redis._config import DEFAULT_CHANNEL, RedisSettings

__all__ = ["DEFAULT_CHANNEL", "RedisClusterCoordinator"]

log = get_logger("ratchet.coordinator.redis")

# The longest wait for a message; close() cuts it short (the stop channel).
LISTEN_WAKE_SECONDS = 0.5


class RedisClusterCoordinator(BroadcastClusterCoordinator):
    """Publishes hints to ``channel`` and delivers what it receives there.

    The subscription is made in the background, by the same loop that reconnects it. The
    constructor waits up to ``ready_timeout`` seconds for it (0: not at all; the plugin
    factory passes 0, so ``Ratchet()`` never waits for a server that may be down);
    :attr:`ready` and :meth:`wait_until_ready` tell whether it is subscribed.
    """

    def __init__(
        self, url: str, node_id: str, *, channel: str = DEFAULT_CHANNEL, ready_timeout: float = 10.0
    ) -> None:
        super().__init__(node_id)
        self.channel = channel
        self._channel_bytes = channel.encode()  # what pub/sub messages name it as
        self._stop_channel = f"{channel}:stop:{node_id}"
        self._where = redact(url)
        self._client = redis.Redis.from_url(
            url, socket_connect_timeout=5, socket_keepalive=True, health_check_interval=5
        )
        self._stop = threading.Event()
        self._subscribed = threading.Event()
        self._thread = threading.Thread(
            target=self._listen, name=f"ratchet-redis-{node_id}", daemon=True
        )
        self._thread.start()
        if ready_timeout > 0 and not self._subscribed.wait(ready_timeout):
            log.warning(
                "Redis coordinator on %s is not subscribed yet; it keeps trying and nodes "
                "poll meanwhile.",
                self._where,
            )

    @classmethod
    def from_environment(
        cls, options: RatchetOptions, _store: Any, node_id: str
    ) -> RedisClusterCoordinator:
        """The plugin factory: ``RATCHET_REDIS_URL`` and ``RATCHET_REDIS_CHANNEL`` from the
        node's options (:class:`RedisSettings`, built once here). Returns at once; the
        subscription is made in the background."""
        settings = RedisSettings.from_options(options)
        return cls(settings.url, node_id, channel=settings.channel, ready_timeout=0)

    @property
    def ready(self) -> bool:
        """Subscribed right now."""
        return self._subscribed.is_set()

    def wait_until_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the subscription; whether it is made."""
        return self._subscribed.wait(timeout)

    def publish(self, payload: str) -> None:
        self._client.publish(self.channel, payload)

    def close_transport(self) -> None:
        self._stop.set()
        if self._subscribed.is_set():
            # Wakes get_message; if the server is gone, the thread ends at its next tick.
            with contextlib.suppress(redis.RedisError, OSError):
                self._client.publish(self._stop_channel, "stop")
        self._thread.join(timeout=5)
        self._client.close()

    def _listen(self) -> None:
        backoff = ReconnectBackoff()
        while not self._stop.is_set():
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]  # redis-py leaves pubsub() unannotated
            try:
                pubsub.subscribe(self.channel, self._stop_channel)
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=LISTEN_WAKE_SECONDS)
                    if not self._subscribed.is_set() and pubsub.subscribed:
                        self._subscribed.set()
                        if backoff.succeeded():
                            log.info("Redis coordinator reconnected to %s.", self._where)
                            self.resync()
                    if (
                        message is not None
                        and message.get("type") == "message"
                        and message.get("channel") == self._channel_bytes
                    ):
                        self.deliver(message["data"])
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                self._subscribed.clear()
                wait = backoff.failed()
                level = backoff.log_level()
                if level is not None:
                    log.log(
                        level,
                        "Redis coordinator lost %s (%s); reconnecting (attempt %d).",
                        self._where,
                        redact(str(exc)),
                        backoff.failures,
                    )
                self._stop.wait(wait)
            finally:
                try:
                    pubsub.close()
                except Exception:
                    log.debug("closing a broken pub/sub connection failed", exc_info=True)

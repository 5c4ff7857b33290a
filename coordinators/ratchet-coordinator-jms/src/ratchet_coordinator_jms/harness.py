"""Conformance-kit harness for the JMS coordinator (``ratchet-tck certify --coordinator jms``).

Coordinators talk to the real broker through a TCP relay owned by the harness, so the kit can
take the network path away for real: :meth:`TcpRelay.cut` closes every relayed connection
and refuses new ones (the coordinators see the socket close, exactly as when a broker dies),
and :meth:`TcpRelay.stall` keeps the sockets open but stops moving bytes (a half-open
connection, found only by missed heart-beats). The shared broker itself is never restarted.
Raw payloads are published on the real topic by a separate STOMP client. The worker process
of the wakeup contract connects to the broker directly, on the harness's own topic.

Reads the coordinator's own ``RATCHET_JMS_URL`` (unless given a URL). Imported only by the
kit (``ratchet-tck``, this package's ``tck`` extra), never by the runtime.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import stomp  # type: ignore[import-untyped]  # stomp.py ships no type information

from ratchet.spi import ClusterCoordinator
from ratchet_coordinator_jms._config import URL_VARIABLE, parse_url
from ratchet_coordinator_jms.coordinator import JmsClusterCoordinator
from ratchet_tck import Capabilities, CoordinatorHarness, TcpRelay, WorkerProcess

__all__ = ["JmsHarness", "TcpRelay"]  # TcpRelay: re-exported from ratchet_tck


def _eventually(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


class JmsHarness(CoordinatorHarness):
    """Coordinators on the real broker, through a relay; one fresh topic per harness."""

    max_latency = 2.0
    capabilities = Capabilities(transport_failure=True, raw_injection=True, separate_processes=True)

    def __init__(self, url: str | None = None, *, heartbeat_seconds: float = 1.0) -> None:
        found = url or os.environ.get(URL_VARIABLE)
        if not found:
            raise RuntimeError(f"Set {URL_VARIABLE} to the broker's STOMP URL.")
        self.url = found
        self.address = parse_url(found)
        self.destination = f"/topic/ratchet.tck.{uuid.uuid4().hex}"
        self.heartbeat_seconds = heartbeat_seconds
        self.relay = TcpRelay((self.address.host, self.address.port))
        userinfo, at, _hostport = urlsplit(found).netloc.rpartition("@")
        self.relayed_url = f"stomp://{userinfo}{at}127.0.0.1:{self.relay.port}"
        self.made: list[JmsClusterCoordinator] = []
        self._injector: Any = None

    def create(self, node_id: str) -> ClusterCoordinator:
        coordinator = JmsClusterCoordinator(
            self.relayed_url,
            node_id,
            destination=self.destination,
            heartbeat_seconds=self.heartbeat_seconds,
            connect_timeout_seconds=5.0,
        )
        self.made.append(coordinator)
        if not coordinator.ready:
            raise AssertionError(f"{coordinator!r} did not subscribe within 5 s")
        return coordinator

    def _live(self) -> list[JmsClusterCoordinator]:
        return [c for c in self.made if not c.closed]

    def break_transport(self) -> None:
        """Cut the network path; returns once every live coordinator has noticed."""
        self.relay.cut()
        _eventually(lambda: not any(c.ready for c in self._live()), 10)

    def restore_transport(self) -> None:
        """Give the path back; returns once every live coordinator is subscribed again."""
        self.relay.restore()
        _eventually(lambda: all(c.ready for c in self._live()), 30)

    def inject_raw(self, coordinator: ClusterCoordinator, payload: str) -> None:
        """Publish ``payload`` on the topic from a separate client (straight to the broker,
        without the node header) and return once ``coordinator`` has processed it."""
        assert isinstance(coordinator, JmsClusterCoordinator)

        def seen() -> int:
            m = coordinator.metrics()
            return m.received + m.transport_failures + m.ignored_self

        before = seen()
        self._injector_connection().send(self.destination, payload)
        if not _eventually(lambda: seen() > before, self.max_latency * 5):
            raise AssertionError(f"the injected payload did not reach {coordinator!r}")

    def _injector_connection(self) -> Any:
        if self._injector is None or not self._injector.is_connected():
            connection = stomp.Connection12(
                [(self.address.host, self.address.port)], auto_content_length=False
            )
            connection.connect(self.address.login, self.address.passcode, wait=False)
            if not _eventually(connection.is_connected, 10):
                raise AssertionError(f"the injector could not connect to {self.address.host}")
            self._injector = connection
        return self._injector

    def worker_process(self) -> WorkerProcess:
        """A worker on the broker itself (not the relay) and this harness's topic."""
        return WorkerProcess(
            coordinator="jms",
            coordinator_class=JmsClusterCoordinator.__name__,
            environment={"RATCHET_JMS_URL": self.url, "RATCHET_JMS_DESTINATION": self.destination},
        )

    def close(self) -> None:
        for coordinator in self.made:
            coordinator.close()
        if self._injector is not None:
            with contextlib.suppress(Exception):
                self._injector.disconnect()
        self.relay.close()

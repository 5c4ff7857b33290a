"""Conformance-kit harness for the Hazelcast coordinator (``ratchet-tck certify --coordinator
hazelcast``).

Coordinators run on the real cluster, each harness on a fresh topic. A Hazelcast client
learns every member's own address from the cluster and reconnects to it directly, so a relay
in front of the member cannot take the path away; the harness breaks the transport by
stopping the member for real and restores it by starting it again, with the script
certification names (``ratchet-tck certify --services-script scripts/services``, run as
``SCRIPT down|up hazelcast``; see :mod:`ratchet_tck.coordinator.services`). Without one
the transport-failure contract is declared N/A. Raw payloads are published on the real
topic by a separate client. The worker process of the wakeup contract joins the same
cluster on the harness's own topic.

Reads the coordinator's own ``RATCHET_HAZELCAST_MEMBERS`` and
``RATCHET_HAZELCAST_CLUSTER_NAME`` (unless given members). Imported only by the kit
(``ratchet-tck``, this package's ``tck`` extra), never by the runtime.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable

from hazelcast.client import HazelcastClient
from hazelcast.proxy.topic import Topic

from ratchet.spi import ClusterCoordinator
from ratchet_coordinator_hazelcast._config import (
    CLUSTER_NAME_VARIABLE,
    DEFAULT_CLUSTER_NAME,
    MEMBERS_VARIABLE,
    parse_members,
)
from ratchet_coordinator_hazelcast.coordinator import HazelcastClusterCoordinator
from ratchet_tck import Capabilities, CoordinatorHarness, WorkerProcess
from ratchet_tck.coordinator import run_services_script, services_script

__all__ = ["HazelcastHarness", "services_script"]


def _eventually(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


class HazelcastHarness(CoordinatorHarness):
    """Coordinators on the real cluster; transport broken by restarting the member."""

    max_latency = 2.0
    capabilities = Capabilities(
        transport_failure=services_script() is not None,
        raw_injection=True,
        separate_processes=True,
    )

    def __init__(self, members: str | None = None, cluster_name: str | None = None) -> None:
        raw = members or os.environ.get(MEMBERS_VARIABLE)
        if not raw:
            raise RuntimeError(f"Set {MEMBERS_VARIABLE} to the cluster's members.")
        self.members = parse_members(raw)
        self.cluster_name = (
            cluster_name or os.environ.get(CLUSTER_NAME_VARIABLE) or DEFAULT_CLUSTER_NAME
        )
        self.topic = f"ratchet-tck-{uuid.uuid4().hex}"
        self.made: list[HazelcastClusterCoordinator] = []
        self._injector: HazelcastClient | None = None

    def create(self, node_id: str) -> ClusterCoordinator:
        coordinator = HazelcastClusterCoordinator(
            node_id,
            members=self.members,
            cluster_name=self.cluster_name,
            topic=self.topic,
            # Reconnect promptly after the member restarts (the default ceiling is 30 s).
            reconnect_max_seconds=2.0,
        )
        self.made.append(coordinator)
        if not coordinator.ready:
            raise AssertionError(f"{coordinator!r} did not subscribe within 10 s")
        return coordinator

    def _live(self) -> list[HazelcastClusterCoordinator]:
        return [c for c in self.made if not c.closed]

    def break_transport(self) -> None:
        """Stop the member; returns once every live coordinator has noticed."""
        run_services_script("down", "hazelcast")
        _eventually(lambda: not any(c.ready for c in self._live()), 30)

    def restore_transport(self) -> None:
        """Start the member; returns once every live coordinator is connected again."""
        run_services_script("up", "hazelcast")
        _eventually(lambda: all(c.ready for c in self._live()), 60)

    def inject_raw(self, coordinator: ClusterCoordinator, payload: str) -> None:
        """Publish ``payload`` on the topic from a separate client and return once
        ``coordinator`` has processed it."""
        assert isinstance(coordinator, HazelcastClusterCoordinator)

        def seen() -> int:
            m = coordinator.metrics()
            return m.received + m.transport_failures + m.ignored_self

        before = seen()
        if self._injector is None:
            self._injector = HazelcastClient(
                cluster_members=list(self.members),
                cluster_name=self.cluster_name,
                client_name="ratchet-tck-injector",
                cluster_connect_timeout=30.0,
            )
        topic: Topic[str] = self._injector.get_topic(self.topic)
        topic.publish(payload).result()
        if not _eventually(lambda: seen() > before, self.max_latency * 5):
            raise AssertionError(f"the injected payload did not reach {coordinator!r}")

    def worker_process(self) -> WorkerProcess:
        """A worker on the same cluster and this harness's topic."""
        return WorkerProcess(
            coordinator="hazelcast",
            coordinator_class=HazelcastClusterCoordinator.__name__,
            environment={
                "RATCHET_HAZELCAST_MEMBERS": ",".join(self.members),
                "RATCHET_HAZELCAST_CLUSTER_NAME": self.cluster_name,
                "RATCHET_HAZELCAST_TOPIC": self.topic,
            },
        )

    def close(self) -> None:
        for coordinator in self.made:
            coordinator.close()
        if self._injector is not None:
            self._injector.shutdown()

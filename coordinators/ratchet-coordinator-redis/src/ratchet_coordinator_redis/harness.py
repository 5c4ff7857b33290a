"""Conformance-kit harness for the Redis coordinator (``ratchet-tck certify --coordinator
redis``): coordinators on the real server, a transport broken by restarting the server, raw
payloads published on the real channel, and a worker process on the harness's own channel.

The restart uses the project's service script (``scripts/services down|up redis``), or the
one named by ``RATCHET_TEST_SERVICES_SCRIPT``; ``RATCHET_TEST_SERVICES_SCRIPT=none`` forbids
restarting the shared server, and the transport-failure contracts are then N/A.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import redis

from ratchet.spi import ClusterCoordinator
from ratchet_coordinator_redis.coordinator import RedisClusterCoordinator
from ratchet_tck import Capabilities, CoordinatorHarness, WorkerProcess
from ratchet_tck.coordinator import processed_count, wait_until_processed

SERVICES = Path(__file__).resolve().parents[4] / "scripts" / "services"


def services_script() -> Path | None:
    """The script that stops and starts Redis: ``RATCHET_TEST_SERVICES_SCRIPT`` (``none``
    forbids restarts), else the repository's ``scripts/services`` when present."""
    named = os.environ.get("RATCHET_TEST_SERVICES_SCRIPT", "").strip()
    if named:
        return Path(named) if named.lower() != "none" and Path(named).is_file() else None
    return SERVICES if SERVICES.is_file() else None


class RedisHarness(CoordinatorHarness):
    """Each harness uses its own channel, so parallel runs do not hear each other."""

    max_latency = 2.0
    capabilities = Capabilities(
        transport_failure=services_script() is not None,
        raw_injection=True,
        separate_processes=True,
    )

    def __init__(self, url: str | None = None) -> None:
        self.url = (
            url or os.environ.get("RATCHET_REDIS_URL") or os.environ["RATCHET_TEST_REDIS_URL"]
        )
        self.channel = f"ratchet:tck:{uuid.uuid4().hex}"
        self.made: list[RedisClusterCoordinator] = []

    def create(self, node_id: str) -> ClusterCoordinator:
        coordinator = RedisClusterCoordinator(self.url, node_id, channel=self.channel)
        self.made.append(coordinator)
        return coordinator

    def _services(self, action: str) -> None:
        script = services_script()
        if script is None:
            raise NotImplementedError("no scripts/services to stop and start Redis")
        subprocess.run([str(script), action, "redis"], check=True, capture_output=True)

    def break_transport(self) -> None:
        """Stop the Redis server (the project's own service script)."""
        self._services("down")

    def restore_transport(self) -> None:
        self._services("up")
        deadline = time.monotonic() + 30
        while not all(c.ready for c in self.made if not c.closed):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)

    def inject_raw(self, coordinator: ClusterCoordinator, payload: str) -> None:
        before = processed_count(coordinator)
        client = redis.Redis.from_url(self.url)
        try:
            client.publish(self.channel, payload)
        finally:
            client.close()
        wait_until_processed(coordinator, before, self.max_latency)

    def worker_process(self) -> WorkerProcess:
        """A worker on the same server and this harness's channel."""
        return WorkerProcess(
            coordinator="redis",
            coordinator_class=RedisClusterCoordinator.__name__,
            environment={"RATCHET_REDIS_URL": self.url, "RATCHET_REDIS_CHANNEL": self.channel},
        )

    def close(self) -> None:
        for coordinator in self.made:
            coordinator.close()

"""Conformance-kit harness for the Redis coordinator (``ratchet-tck certify --coordinator
redis``): coordinators on the real server, a transport broken by restarting the server, raw
payloads published on the real channel, and a worker process on the harness's own channel.

The server is the coordinator's own setting, ``RATCHET_REDIS_URL`` (or the URL the harness
is given). The restart runs the script certification names (``ratchet-tck certify
--services-script scripts/services``, see :mod:`ratchet_tck.coordinator.services`) as
``SCRIPT down|up redis``; without one the transport-failure contracts are N/A. Imported
only by the kit (``ratchet-tck``, this package's ``tck`` extra), never by the runtime.
"""

from __future__ import annotations

import os
import time
import uuid

import redis

from ratchet.spi import ClusterCoordinator
from ratchet_coordinator_redis._config import RedisSettings
from ratchet_coordinator_redis.coordinator import RedisClusterCoordinator
from ratchet_tck import Capabilities, CoordinatorHarness, WorkerProcess
from ratchet_tck.coordinator import (
    processed_count,
    run_services_script,
    services_script,
    wait_until_processed,
)


class RedisHarness(CoordinatorHarness):
    """Each harness uses its own channel, so parallel runs do not hear each other."""

    max_latency = 2.0
    capabilities = Capabilities(
        transport_failure=services_script() is not None,
        raw_injection=True,
        separate_processes=True,
    )

    def __init__(self, url: str | None = None) -> None:
        self.url = url or RedisSettings.from_env(os.environ).url
        self.channel = f"ratchet:tck:{uuid.uuid4().hex}"
        self.made: list[RedisClusterCoordinator] = []

    def create(self, node_id: str) -> ClusterCoordinator:
        coordinator = RedisClusterCoordinator(self.url, node_id, channel=self.channel)
        self.made.append(coordinator)
        return coordinator

    def break_transport(self) -> None:
        """Stop the Redis server (with the services script certification names)."""
        run_services_script("down", "redis")

    def restore_transport(self) -> None:
        run_services_script("up", "redis")
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

"""Conformance-kit harness for the Redis coordinator (``ratchet-tck certify --coordinator
redis``): coordinators on the real server, a transport broken by restarting the server, raw
payloads published on the real channel."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import redis

from ratchet.spi import ClusterCoordinator
from ratchet_coordinator_redis.coordinator import RedisClusterCoordinator
from ratchet_tck import Capabilities, CoordinatorHarness
from ratchet_tck.coordinator import processed_count, wait_until_processed

SERVICES = Path(__file__).resolve().parents[4] / "scripts" / "services"


class RedisHarness(CoordinatorHarness):
    """Each harness uses its own channel, so parallel runs do not hear each other."""

    max_latency = 2.0
    capabilities = Capabilities(transport_failure=SERVICES.exists(), raw_injection=True)

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

    def break_transport(self) -> None:
        """Stop the Redis server (the project's own service script)."""
        subprocess.run([str(SERVICES), "down", "redis"], check=True, capture_output=True)

    def restore_transport(self) -> None:
        subprocess.run([str(SERVICES), "up", "redis"], check=True, capture_output=True)
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

    def close(self) -> None:
        for coordinator in self.made:
            coordinator.close()

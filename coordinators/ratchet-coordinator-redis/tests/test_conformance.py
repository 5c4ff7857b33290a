"""The Redis coordinator held to the coordinator suite of ratchet-tck, on a real server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ratchet_coordinator_redis.harness import RedisHarness
from ratchet_tck import ClusterCoordinatorSuite

pytestmark = pytest.mark.server


class TestRedisCoordinator(ClusterCoordinatorSuite):
    tck_name = "redis (ratchet-coordinator-redis)"
    capabilities = RedisHarness.capabilities

    @pytest.fixture
    def coordinator_harness(self, redis_url: str) -> Iterator[RedisHarness]:
        harness = RedisHarness(redis_url)
        yield harness
        harness.close()

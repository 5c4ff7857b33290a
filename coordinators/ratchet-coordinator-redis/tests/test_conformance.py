"""The Redis coordinator held to the coordinator suite of ratchet-tck, on a real server."""

from __future__ import annotations

import pytest

from ratchet_coordinator_redis.harness import RedisHarness
from ratchet_tck import ClusterCoordinatorSuite
from ratchet_tck.coordinator.package_checks import harness_fixture

pytestmark = pytest.mark.server


class TestRedisCoordinator(ClusterCoordinatorSuite):
    tck_name = "redis (ratchet-coordinator-redis)"
    capabilities = RedisHarness.capabilities
    coordinator_harness = harness_fixture(RedisHarness, "redis_url")

"""Entry point of the Redis coordinator. Import-light: redis is imported only when chosen."""

from __future__ import annotations

import os
from typing import Any

from ratchet.plugins import CoordinatorPlugin, hookimpl


def availability(_options: Any, _store: Any) -> str | None:
    """Installed and configured means available."""
    if not os.environ.get("RATCHET_REDIS_URL", "").strip():
        return "RATCHET_REDIS_URL is not set"
    return None


@hookimpl
def ratchet_cluster_coordinators() -> list[CoordinatorPlugin]:
    return [
        CoordinatorPlugin(
            name="redis",
            factory="ratchet_coordinator_redis.coordinator:RedisClusterCoordinator.from_environment",
            availability="ratchet_coordinator_redis._plugin:availability",
            package="ratchet-coordinator-redis",
            rank=50,
            description="Redis pub/sub",
            tck_harness="ratchet_coordinator_redis.harness:RedisHarness",
        )
    ]

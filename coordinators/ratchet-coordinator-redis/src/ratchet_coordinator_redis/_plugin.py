"""Entry point of the Redis coordinator. Import-light: redis is imported only when chosen."""

from __future__ import annotations

from typing import Any

from ratchet import RatchetOptions
from ratchet.plugins import CoordinatorPlugin, hookimpl
from ratchet_coordinator_redis._config import URL_VARIABLE, RedisSettings


def availability(options: RatchetOptions, _store: Any) -> str | None:
    """Installed and configured means available: ``RATCHET_REDIS_URL`` is set in the
    node's options. A URL of another scheme raises ConfigurationError naming the variable."""
    if not options.environment.get(URL_VARIABLE, "").strip():
        return f"{URL_VARIABLE} is not set"
    RedisSettings.from_options(options)  # standard library only: checks the URL
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

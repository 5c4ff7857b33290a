"""Entry point of the Redis coordinator. Import-light: redis is imported only when chosen."""

from __future__ import annotations

import os
from typing import Any

from ratchet.errors import ConfigurationError
from ratchet.plugins import CoordinatorPlugin, hookimpl

URL_SCHEMES = ("redis", "rediss", "unix")


def availability(_options: Any, _store: Any) -> str | None:
    """Installed and configured means available: ``RATCHET_REDIS_URL`` is set. A URL of
    another scheme raises ConfigurationError naming the variable."""
    url = os.environ.get("RATCHET_REDIS_URL", "").strip()
    if not url:
        return "RATCHET_REDIS_URL is not set"
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in URL_SCHEMES:
        raise ConfigurationError(
            f"RATCHET_REDIS_URL has scheme {scheme!r}; it must be a redis://, rediss:// or "
            "unix:// URL, for example redis://localhost:6379/0."
        )
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

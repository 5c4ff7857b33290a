"""Ratchet wakeups over Redis pub/sub.

The package is imported whenever plugins load (its ``_plugin`` entry point lives in it), so
the coordinator and its driver load only on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet_coordinator_redis.coordinator import RedisClusterCoordinator

__all__ = ["RedisClusterCoordinator"]


def __getattr__(name: str) -> Any:
    if name == "RedisClusterCoordinator":
        from ratchet_coordinator_redis.coordinator import RedisClusterCoordinator

        return RedisClusterCoordinator
    raise AttributeError(name)

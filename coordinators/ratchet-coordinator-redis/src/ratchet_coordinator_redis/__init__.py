"""Ratchet wakeups over Redis pub/sub."""

from ratchet_coordinator_redis.coordinator import RedisClusterCoordinator

__all__ = ["RedisClusterCoordinator"]

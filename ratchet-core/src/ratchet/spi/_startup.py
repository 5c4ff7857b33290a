"""The startup coordinator spec: leases for start-up work that exactly one node does."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ratchet.spi._store import LockStore

__all__ = ["StartupCoordinator", "StoreStartupCoordinator"]


class StartupCoordinator(ABC):
    """Leases for destructive start-up work that exactly one node should do."""

    @abstractmethod
    def try_acquire(self, action: str, lease_ttl: float) -> bool:
        """Take the lease for ``action`` for ``lease_ttl`` seconds; ``False`` when another
        node holds it."""

    @abstractmethod
    def release(self, action: str) -> None:
        """Give the lease back early. A no-op when this node does not hold it."""


class StoreStartupCoordinator(StartupCoordinator):
    """The default StartupCoordinator: a lease in the store's lock table."""

    def __init__(self, locks: LockStore, owner: str) -> None:
        self._locks = locks
        self._owner = owner

    def try_acquire(self, action: str, lease_ttl: float) -> bool:
        return self._locks.try_lock(f"startup:{action}", lease_ttl, self._owner)

    def release(self, action: str) -> None:
        self._locks.release_lock(f"startup:{action}", self._owner)

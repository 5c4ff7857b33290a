"""Runtime specs: cluster wakeups, node identity, retry and class policies, startup leases."""

from __future__ import annotations

import os
import re
import secrets
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ratchet.spi._store import LockStore

__all__ = [
    "ClassPolicy",
    "ClusterCoordinator",
    "DefaultNodeIdentityProvider",
    "DefaultRetryPolicy",
    "ModuleAllowlistClassPolicy",
    "NoOpClusterCoordinator",
    "NodeIdentityProvider",
    "RetryPolicy",
    "StartupCoordinator",
    "StoreStartupCoordinator",
    "WakeupHint",
]

MAX_NODE_ID_LENGTH = 64


@dataclass(frozen=True, kw_only=True, slots=True)
class WakeupHint:
    """A remote node enqueued work. A hint may only cause a poll, never run anything."""

    priority: int
    source_node: str
    execution_target: str | None = None


class ClusterCoordinator(ABC):
    """Pushes "new work" hints between nodes so idle pollers wake at once.

    Delivery is best effort (at most once); correctness never depends on it, because
    polling remains the floor.

    ``store_sends_enqueue_hints`` is ``True`` when the coordinator arranged for the store
    to send its hints inside every enqueue (``SupportsEnqueueHints``); the application
    then does not call :meth:`notify_new_work` after enqueues.
    """

    store_sends_enqueue_hints: bool = False

    @abstractmethod
    def notify_new_work(
        self, priority: int, source: str, execution_target: str | None = None
    ) -> None:
        """Broadcast a hint to every other node. Must never raise, even after :meth:`close`
        or while the transport is down; must not deliver the hint back to ``source``."""

    @abstractmethod
    def register_wakeup_listener(self, listener: Callable[[WakeupHint], None]) -> None:
        """Add a listener called for every hint received. One listener raising must not
        stop the others; hints received before the first listener registers are buffered
        (bounded, oldest dropped)."""

    @abstractmethod
    def close(self) -> None:
        """Stop delivery and release the transport. Idempotent."""


class NoOpClusterCoordinator(ClusterCoordinator):
    """The default: no remote hints. Local enqueues still wake the local poller."""

    def notify_new_work(
        self, priority: int, source: str, execution_target: str | None = None
    ) -> None:
        return None

    def register_wakeup_listener(self, listener: Callable[[WakeupHint], None]) -> None:
        return None

    def close(self) -> None:
        return None


class NodeIdentityProvider(ABC):
    """Names this process in the cluster: claim owners, heartbeats and lock owners."""

    @abstractmethod
    def get_node_id(self) -> str:
        """A cluster-unique id, stable for the life of this process, at most 64 characters."""


class DefaultNodeIdentityProvider(NodeIdentityProvider):
    """``hostname-pid-<8 hex>``: unique per process start, even when a PID is reused."""

    def __init__(self, node_id: str | None = None) -> None:
        if node_id is None:
            try:
                host = socket.gethostname() or "node"
            except OSError:
                host = "node"
            host = re.sub(r"[^A-Za-z0-9.-]", "-", host)
            suffix = f"-{os.getpid()}-{secrets.token_hex(4)}"
            node_id = host[: MAX_NODE_ID_LENGTH - len(suffix)] + suffix
        if not node_id or len(node_id) > MAX_NODE_ID_LENGTH:
            raise ValueError(
                f"Node id {node_id!r} must be 1 to {MAX_NODE_ID_LENGTH} characters long."
            )
        self._node_id = node_id

    def get_node_id(self) -> str:
        return self._node_id


class RetryPolicy(ABC):
    """Decides whether a failed attempt is retried, and may override the delay."""

    @abstractmethod
    def should_retry(self, attempt: int, cause: BaseException) -> bool:
        """Whether attempt number ``attempt`` (1-based) failing with ``cause`` may retry.

        The job's ``max_retries`` still applies on top: a ``True`` never exceeds it.
        """

    @abstractmethod
    def get_delay(self, attempt: int) -> float:
        """Seconds to wait before the next attempt; 0 defers to the job's own backoff."""


class DefaultRetryPolicy(RetryPolicy):
    """Always retry (within ``max_retries``), using the job's backoff."""

    def should_retry(self, attempt: int, cause: BaseException) -> bool:
        return True

    def get_delay(self, attempt: int) -> float:
        return 0.0


@runtime_checkable
class ClassPolicy(Protocol):
    """Which job targets (``module:qualname``) may be imported and run.

    A stored target is untrusted text, and the worker asks twice, both times before
    anything is called:

    1. :meth:`is_allowed` with the stored target, before any import: a refused target is
       never imported.
    2. :meth:`is_allowed_definition` for each object that resolving the qualname reaches,
       one attribute at a time, before the next step is taken: the ``module:qualname``
       where that object was really *defined*, read from the object itself. This is what
       refuses ``helpers:os.system`` or ``helpers:run`` after ``from subprocess import
       run`` in ``helpers``: the string names an allowed module, the object lives in
       another.

    Whatever the policy says, the worker never resolves through a module object
    (``helpers:os.system`` stops at ``os``) and never calls an object whose definition
    it cannot name. Registered jobs (``@app.job``) are allowed by the application before
    the policy is asked.
    """

    def is_allowed(self, target: str) -> bool:
        """Whether ``target``, as stored, may be imported. Must not import anything."""
        ...

    def is_allowed_definition(self, definition: str) -> bool:
        """Whether an object defined at ``definition`` may be reached while resolving a
        target and, when it is the last step, called.

        ``definition`` is ``module:qualname`` taken from the object after resolution: a
        function's or class's ``__module__`` and ``__qualname__`` (decorators unwrapped,
        a bound method's function), an instance's class. Called for every step, so a
        policy that allows ``pkg:Service.run`` must allow ``pkg:Service`` too.
        """
        ...


def _inside(module: str, packages: Iterable[str]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


class ModuleAllowlistClassPolicy:
    """Allows targets whose module is one of, or inside one of, the given packages, and
    only objects *defined* in those packages: a function an allowed module imported from
    elsewhere is refused."""

    def __init__(self, allowed_modules: Iterable[str]) -> None:
        self.allowed_modules = tuple(m.strip() for m in allowed_modules if m.strip())

    def is_allowed(self, target: str) -> bool:
        return _inside(target.partition(":")[0], self.allowed_modules)

    def is_allowed_definition(self, definition: str) -> bool:
        return _inside(definition.partition(":")[0], self.allowed_modules)


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

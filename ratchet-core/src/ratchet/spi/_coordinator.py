"""The cluster coordinator spec: "new work" hints pushed between nodes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "ClusterCoordinator",
    "NoOpClusterCoordinator",
    "SupportsCancelHints",
    "SupportsCompletionHints",
    "WakeupHint",
]


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

    Optionally, a coordinator with a connection says whether it is receiving hints right
    now through a ``ready`` property (``bool``: subscribed, listening, connected). Metrics
    export it as ``ratchet_coordinator_connected`` and ``ratchet bench`` waits for it;
    a coordinator without the property is simply not reported. Reading it must be cheap
    and must never raise or block.
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


@runtime_checkable
class SupportsCompletionHints(Protocol):
    """A coordinator that tells a waiting node when a job it waits for has ended, so
    ``Ratchet.wait_for`` wakes at once instead of at its next read of the store.

    Best effort, like wakeup hints: a lost message only means the waiter finds the end at
    its next read. Nothing is sent for jobs nobody watches, so a cluster where nobody waits
    pays one set lookup per finished job. :class:`BroadcastClusterCoordinator` implements
    it for every transport it carries.
    """

    def watch_jobs(self, job_ids: Sequence[str], seconds: float) -> None:
        """Ask every other node to announce the end of these jobs during the next
        ``seconds`` (a waiter repeats the watch to wait longer). Must never raise."""
        ...

    def notify_job_ended(self, job_id: str) -> None:
        """This node recorded ``job_id``'s end (succeeded, dead-lettered, canceled):
        announce it when another node watches it, once. Called for every job that ends,
        so it must cost next to nothing when nobody watches. Must never raise."""
        ...

    def register_end_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(job_id)`` for every end another node announces. One listener
        raising must not stop the others."""
        ...


@runtime_checkable
class SupportsCancelHints(Protocol):
    """A coordinator that tells the other nodes at once that jobs were canceled while
    they ran, so the node running one stops it now rather than at its next check of the
    store (within a poll interval).

    Only a hint, like a wakeup: the receiving node asks the store which of the jobs it
    holds are canceled before it stops anything, so a lost, late, repeated or forged
    message changes nothing but timing. :class:`BroadcastClusterCoordinator` implements
    it for every transport it carries.
    """

    def notify_canceled(self, job_ids: Sequence[str]) -> None:
        """This node canceled these running jobs: tell every other node. Must never
        raise."""
        ...

    def register_cancel_listener(self, listener: Callable[[Sequence[str]], None]) -> None:
        """Call ``listener(job_ids)`` for every cancel another node announces. One
        listener raising must not stop the others."""
        ...

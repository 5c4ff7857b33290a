"""What the engine gets from the application: one node's context, not the ``Ratchet`` façade.

The worker, the recurring scheduler and the runner need a handful of things the
application holds (the store, the node id, the options, the registered jobs, the
policies, a way to wake this process's workers); :class:`NodeContext` carries exactly
those. The engine therefore never imports :mod:`ratchet._app` nor calls its private
methods, and the application stays free to change how it builds them. What it costs: a
context is a snapshot taken when a worker is made (as the worker's attributes always
were), so replacing ``app.retry_policy`` later does not reach a worker already built;
the registry and the recurring definitions are read live.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ratchet._config import RatchetOptions
from ratchet._engine.permits import Resources
from ratchet._jobs import JobDefinition
from ratchet._observers import Observers
from ratchet._payloads import Payloads
from ratchet._types import RecurringDefinition
from ratchet.circuit_breakers import CircuitBreakers
from ratchet.spi import ClassPolicy, JobStore, RetryPolicy, StartupCoordinator

__all__ = ["LocalWakeups", "NodeContext", "Wakeable"]


class Wakeable(Protocol):
    """Something that polls now when woken: a worker."""

    def wake(self, *, schedules_changed: bool = False) -> None: ...

    def cancel_local(self, job_id: str) -> None:
        """``job_id`` was canceled: stop it if it runs (or waits to run) here."""
        ...

    def check_cancels(self) -> None:
        """Jobs were canceled elsewhere: check the store for those held here, soon."""
        ...


class LocalWakeups:
    """The running workers of this process, woken by local enqueues, coordinator hints,
    recovered orphans and recurring fires. Thread-safe.

    Workers are held weakly: a worker that was never stopped is not kept alive by this.
    """

    def __init__(self) -> None:
        self._workers: weakref.WeakSet[Wakeable] = weakref.WeakSet()
        self._lock = threading.Lock()

    def attach(self, worker: Wakeable) -> None:
        with self._lock:
            self._workers.add(worker)

    def detach(self, worker: Wakeable) -> None:
        with self._lock:
            self._workers.discard(worker)

    def wake(self, *, schedules_changed: bool = False) -> None:
        """Make this process's workers poll now; with ``schedules_changed`` their
        recurring schedulers also re-read the schedules (not on every enqueue: that would
        cost a scheduler pass, with a lock write, per job)."""
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.wake(schedules_changed=schedules_changed)

    def cancel(self, job_id: str) -> None:
        """A job was canceled in this process: its workers stop it now if they hold it,
        without waiting for their next check of the store."""
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.cancel_local(job_id)

    def check_cancels(self) -> None:
        """Another node announced a cancel (a coordinator hint): this process's workers
        check the store now for canceled jobs among those they hold. Only the store's
        answer stops a job, so a hint cannot."""
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.check_cancels()


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeContext:
    """Everything one node's engine needs from the application.

    ``registry`` is the application's live mapping of registered jobs (jobs registered
    after the worker was made still run); ``recurring_definitions()`` returns the
    ``@app.recurring`` definitions as they are when called. ``open_companion_store()``
    returns a second store instance on the same backend (its own connection) for the
    heartbeats, or the store itself when the backend cannot be shared; the caller closes
    an instance that is not :attr:`store`. ``observers`` holds the application's event
    subscribers and middleware (:mod:`ratchet._observers`); ``trusted_callbacks`` the
    callbacks it named by function (live, see :mod:`ratchet._engine.callbacks`);
    ``payloads`` seals and opens job payloads with the application's keys
    (:mod:`ratchet._payloads`); ``circuit_breakers`` are the application's breakers, which
    guard the jobs that name one (:mod:`ratchet._engine.breaking`); ``resources`` the
    application's configured resources, whose permits the jobs naming one hold
    (:mod:`ratchet._engine.permits`).
    """

    store: JobStore
    node_id: str
    options: RatchetOptions
    registry: Mapping[str, JobDefinition]
    class_policy: ClassPolicy
    retry_policy: RetryPolicy
    startup: StartupCoordinator
    wakeups: LocalWakeups
    recurring_definitions: Callable[[], Sequence[RecurringDefinition]]
    open_companion_store: Callable[[], JobStore]
    observers: Observers
    trusted_callbacks: Mapping[str, Callable[..., Any]]
    payloads: Payloads = field(default_factory=Payloads)
    circuit_breakers: CircuitBreakers = field(default_factory=CircuitBreakers)
    resources: Resources = field(default_factory=Resources)

"""Resource permits (``app.configure_resource``, ``@app.job(resource=...)``): at most
``max_concurrent`` attempts holding one resource at once across the whole cluster.

The limit lives in the store (``SupportsResourcePermits``), written by every worker at
start from its application's configuration, so all nodes compare with one number. A
claimed job that names a resource asks the store for a permit when it is about to start,
after the per-worker checks (concurrency, circuit breaker), on the job's own thread:

* granted: the attempt runs and gives the permit back when it ends (after its outcome is
  recorded; the permit of an ended claim counts for nothing anyway, so a lost release,
  or a node that dies, leaks nothing beyond the claim: orphan recovery ends the claim,
  and its sweep frees what is left);
* at capacity: the job is deferred by the resource's ``retry_delay_ms`` exactly as
  ``raise Snooze`` would, without using an attempt (:mod:`ratchet._engine.job_limits`
  says why deferring beats waiting on the worker);
* the store cannot be asked (it went away): deferred the same way, with a warning;
* the resource is unknown to the store, or the store keeps no permits: the attempt
  fails with that error, retried by the usual rules (a deferral would never end).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ratchet._logs import get_logger
from ratchet.errors import ConfigurationError, ResourceNotConfiguredError
from ratchet.spi import (
    JobStore,
    SupportsResourcePermits,
    check_max_concurrent,
    check_resource_name,
)

__all__ = [
    "DEFAULT_RETRY_DELAY_MS",
    "PermitGate",
    "PermitHeld",
    "ResourceSettings",
    "Resources",
    "capacity_message",
]

log = get_logger("ratchet.worker")

DEFAULT_RETRY_DELAY_MS = 5000
"""How long a job waits for a resource at capacity when its node has no setting for it."""

_MAX_RETRY_DELAY_MS = 24 * 3600 * 1000
# A resource at capacity with no delay would have its workers claim and defer the same
# jobs in a loop, each a store round trip: the delay is at least this.
_MIN_RETRY_DELAY_MS = 10


@dataclass(frozen=True, slots=True)
class ResourceSettings:
    """One configured resource: its cluster-wide limit and how long a job that finds it
    at capacity waits before it is due again."""

    name: str
    max_concurrent: int
    retry_delay_ms: int = DEFAULT_RETRY_DELAY_MS


class Resources:
    """An application's configured resources, by name. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settings: dict[str, ResourceSettings] = {}

    def configure(
        self, name: str, *, max_concurrent: int, retry_delay_ms: int = DEFAULT_RETRY_DELAY_MS
    ) -> ResourceSettings:
        """Record (or change) the resource ``name``; ValueError naming a bad value."""
        if (
            isinstance(retry_delay_ms, bool)
            or not isinstance(retry_delay_ms, int)
            or not _MIN_RETRY_DELAY_MS <= retry_delay_ms <= _MAX_RETRY_DELAY_MS
        ):
            raise ConfigurationError(
                f"retry_delay_ms {retry_delay_ms!r} must be a whole number of milliseconds "
                f"from {_MIN_RETRY_DELAY_MS} to {_MAX_RETRY_DELAY_MS} (a day): with no "
                "delay, a resource at capacity would have its workers claim and defer the "
                "same jobs in a loop."
            )
        settings = ResourceSettings(
            check_resource_name(name), check_max_concurrent(max_concurrent), retry_delay_ms
        )
        with self._lock:
            self._settings[name] = settings
        return settings

    def get(self, name: str) -> ResourceSettings | None:
        with self._lock:
            return self._settings.get(name)

    def all(self) -> list[ResourceSettings]:
        """Every configured resource, by name."""
        with self._lock:
            return [self._settings[name] for name in sorted(self._settings)]

    def require(self, name: str, where: str) -> ResourceSettings:
        """The settings of ``name``; ResourceNotConfiguredError saying how to configure it
        (``where`` names what asked for it)."""
        settings = self.get(name)
        if settings is None:
            known = ", ".join(repr(s.name) for s in self.all()) or "none"
            raise ResourceNotConfiguredError(
                f"{where} names resource {name!r}, which is not configured (configured: "
                f"{known}). Call app.configure_resource({name!r}, max_concurrent=N) first."
            )
        return settings


def capacity_message(resource: str, delay_seconds: float) -> str:
    """The execution record's text for a job deferred by its resource's limit."""
    return (
        f"deferred: resource {resource!r} is at capacity across the cluster; due again in "
        f"{delay_seconds:g} s"
    )


@dataclass(slots=True)
class PermitHeld:
    """A granted permit, given back once by :meth:`PermitGate.release`."""

    resource: str
    job_id: str
    claim_seq: int
    released: bool = False


class PermitGate:
    """Acquires and releases one worker's permits on its store."""

    def __init__(self, store: JobStore, node_id: str, resources: Resources) -> None:
        self.store = store
        self.node_id = node_id
        self.resources = resources
        self._asked = False  # whether this node ever asked for a permit (the drain's sweep)

    def permit_store(self) -> SupportsResourcePermits | None:
        store = self.store
        return store if isinstance(store, SupportsResourcePermits) else None

    def publish(self) -> None:
        """Write every configured resource's limit to the store (a worker's start), so the
        whole cluster compares with the limit this application sets. ConfigurationError
        when resources are configured and the store keeps no permits."""
        settings = self.resources.all()
        if not settings:
            return
        store = self.permit_store()
        if store is None:
            raise ConfigurationError(
                f"Resources {[s.name for s in settings]} are configured, but the store "
                f"{self.store.describe()} keeps no resource permits; use a store that "
                "offers SupportsResourcePermits (every first-party store does)."
            )
        for resource in settings:
            stored = store.resource_limit(resource.name)
            if stored is not None and stored != resource.max_concurrent:
                log.warning(
                    "resource %r: max_concurrent changes from %d to %d (configure every "
                    "node alike: the last one to start sets the cluster's limit)",
                    resource.name,
                    stored,
                    resource.max_concurrent,
                )
            store.configure_resource(resource.name, max_concurrent=resource.max_concurrent)

    def delay_seconds(self, resource: str) -> float:
        settings = self.resources.get(resource)
        delay_ms = DEFAULT_RETRY_DELAY_MS if settings is None else settings.retry_delay_ms
        return delay_ms / 1000

    def acquire(self, resource: str, job_id: str, claim_seq: int) -> PermitHeld | None:
        """A permit for the claim, or ``None`` when the resource is at capacity (or the
        store could not be asked: logged). Raises what the job should fail with: the
        store keeps no permits, or the resource is unknown to it."""
        store = self.permit_store()
        if store is None:
            raise ConfigurationError(
                f"Job {job_id} needs resource {resource!r}, but the store "
                f"{self.store.describe()} keeps no resource permits."
            )
        self._asked = True
        try:
            granted = store.acquire_permit(resource, job_id, claim_seq, node_id=self.node_id)
        except ResourceNotConfiguredError:
            raise
        except Exception as exc:  # the store went away: wait as for capacity
            log.warning(
                "job %s: could not ask the store for a permit of resource %r (%s); deferring it",
                job_id,
                resource,
                type(exc).__name__,
            )
            return None
        return PermitHeld(resource, job_id, claim_seq) if granted else None

    def release(self, permit: PermitHeld) -> None:
        """Give the permit back, once. A failure is only logged: the permit of an ended
        claim counts for nothing, and recovery's sweep deletes it."""
        if permit.released:
            return
        permit.released = True
        store = self.permit_store()
        if store is None:
            return
        try:
            store.release_permit(permit.resource, permit.job_id, permit.claim_seq)
        except Exception as exc:
            log.warning(
                "job %s: could not give back its permit of resource %r (%s); it counts for "
                "nothing now that the attempt ended",
                permit.job_id,
                permit.resource,
                type(exc).__name__,
            )

    def release_node(self) -> None:
        """Delete this node's permits (a drain, after its claims were given back)."""
        store = self.permit_store()
        if store is None or not self._asked:
            return
        try:
            store.release_node_permits(self.node_id)
        except Exception as exc:
            log.warning("could not delete this node's permits at drain (%s)", exc)

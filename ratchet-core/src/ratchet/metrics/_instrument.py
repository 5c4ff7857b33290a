""":class:`RatchetMetrics`: the series and probes of one application, in one registry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet.circuit_breakers import BreakerState, CircuitBreakers
from ratchet.metrics._cluster import CLUSTER_LOCK, ClusterCollector
from ratchet.metrics._health import WorkerHealth
from ratchet.metrics._http import ASGIApp, MetricsServer, WSGIApp, asgi_app, wsgi_app
from ratchet.metrics._node import NodeMetrics
from ratchet.spi import BroadcastClusterCoordinator, ClusterCoordinator

if TYPE_CHECKING:
    from ratchet._app import Ratchet
    from ratchet._engine.worker import Worker

__all__ = ["RatchetMetrics", "make_asgi_app", "make_wsgi_app"]

log = get_logger("ratchet.metrics")


class _CoordinatorHints(Collector):
    """``ratchet_coordinator_hints_total{direction}`` and
    ``ratchet_coordinator_transport_failures_total`` from a coordinator built on
    :class:`~ratchet.spi.BroadcastClusterCoordinator` (its exact counters). Hints a store
    sends inside the enqueue (PostgreSQL with the pg coordinator) are not counted as sent."""

    def __init__(self, coordinator: BroadcastClusterCoordinator) -> None:
        self.coordinator = coordinator

    def collect(self) -> Iterable[Metric]:
        counts = self.coordinator.metrics()
        hints = CounterMetricFamily(
            "ratchet_coordinator_hints",
            "Wake-up hints this node's coordinator published and received.",
            labels=["direction"],
        )
        hints.add_metric(["sent"], counts.sent)
        hints.add_metric(["received"], counts.received)
        failures = CounterMetricFamily(
            "ratchet_coordinator_transport_failures",
            "Coordinator publishes and messages that failed (nodes fall back to polling).",
            value=counts.transport_failures,
        )
        return [hints, failures]


class _BreakerStates(Collector):
    """``ratchet_circuit_breaker_state{breaker}``: 0 closed, 1 half-open, 2 open, for each
    circuit breaker of this process (breakers are per node, so each node reports its own)."""

    CODES: ClassVar[dict[BreakerState, float]] = {
        BreakerState.CLOSED: 0.0,
        BreakerState.HALF_OPEN: 1.0,
        BreakerState.OPEN: 2.0,
    }

    def __init__(self, breakers: CircuitBreakers) -> None:
        self.breakers = breakers

    def collect(self) -> Iterable[Metric]:
        gauge = GaugeMetricFamily(
            "ratchet_circuit_breaker_state",
            "State of this node's circuit breaker: 0 closed, 1 half-open (trial calls), "
            "2 open (its jobs are deferred).",
            labels=["breaker"],
        )
        for snapshot in self.breakers.snapshots():
            gauge.add_metric([snapshot.name], self.CODES[snapshot.state])
        return [gauge]


class _CoordinatorConnected(Collector):
    """``ratchet_coordinator_connected{coordinator}``: 1 while the coordinator says it
    receives hints (its optional ``ready`` property, see
    :class:`~ratchet.spi.ClusterCoordinator`), else 0. Not exported for a coordinator
    without the property (polling only, or one that does not say)."""

    def __init__(self, coordinator: ClusterCoordinator) -> None:
        self.coordinator = coordinator
        self.name = type(coordinator).__name__

    def collect(self) -> Iterable[Metric]:
        try:
            connected = bool(getattr(self.coordinator, "ready", False))
        except Exception as exc:  # a scrape must not fail on a broken property
            log.debug("Reading %s.ready failed: %s", self.name, redact(str(exc)))
            connected = False
        gauge = GaugeMetricFamily(
            "ratchet_coordinator_connected",
            "1 while this node's coordinator receives wake-up hints, 0 when it does not "
            "(the node falls back to polling).",
            labels=["coordinator"],
        )
        gauge.add_metric([self.name], 1.0 if connected else 0.0)
        return [gauge]


class RatchetMetrics:
    """Prometheus series and health probes of one application (or one worker), kept in
    their own ``CollectorRegistry`` (``registry``, or a new one: never the global default,
    so several applications in one process do not collide).

    Built from a :class:`~ratchet.Ratchet`, it subscribes to the application's events at
    once (every worker of the application feeds it) and reports the health of the worker
    given to :meth:`watch`. Built from a worker (``app.worker()``), it watches that worker.
    ``cluster=True`` adds the cluster series, reported by one node at a time
    (:mod:`ratchet.metrics._cluster`).

    Series of the application's coordinator are added when it is built on
    :class:`~ratchet.spi.BroadcastClusterCoordinator` (hints sent and received), and
    ``ratchet_coordinator_connected`` when it has the optional ``ready`` property (every
    first-party coordinator does).
    """

    def __init__(
        self,
        source: Ratchet | Worker,
        *,
        registry: CollectorRegistry | None = None,
        cluster: bool = True,
        cluster_cache_seconds: float = 10.0,
    ) -> None:
        from ratchet._app import Ratchet

        self.registry = registry if registry is not None else CollectorRegistry()
        coordinator: ClusterCoordinator | None
        if isinstance(source, Ratchet):
            subscribe: Any = source.on
            store, node_id, options = source.store, source.node_id, source.options
            coordinator, worker = source.coordinator, None
            breakers = source.circuit_breakers
            resources = source.resources
        elif hasattr(source, "context") and hasattr(source, "heartbeat"):
            subscribe = source.context.observers.events.subscribe
            store, node_id, options = source.store, source.node_id, source.options
            coordinator, worker = None, source
            breakers = source.context.circuit_breakers
            resources = source.context.resources
        else:
            raise TypeError(
                f"RatchetMetrics() takes a ratchet.Ratchet application or one of its "
                f"workers (app.worker()), not {source!r}."
            )
        self.node_id = node_id
        self.store = store
        self.node = NodeMetrics(self.registry)
        self.node.subscribe(subscribe)
        self.health = WorkerHealth(worker)
        self.registry.register(self.health)
        self.registry.register(_BreakerStates(breakers))
        if isinstance(coordinator, BroadcastClusterCoordinator):
            self.registry.register(_CoordinatorHints(coordinator))
        if coordinator is not None and hasattr(type(coordinator), "ready"):
            self.registry.register(_CoordinatorConnected(coordinator))
        self.cluster: ClusterCollector | None = None
        if cluster:
            self.cluster = ClusterCollector(
                store,
                grace_seconds=options.orphan_grace_seconds,
                lock_owner=node_id,
                cache_seconds=cluster_cache_seconds,
                resources=lambda: [settings.name for settings in resources.all()],
            )
            self.registry.register(self.cluster)

    def watch(self, worker: Worker) -> Worker:
        """Report ``worker``'s health at ``/healthz`` and ``/readyz``; returns it."""
        self.health.watch(worker)
        return worker

    def wsgi_app(self) -> WSGIApp:
        """``/metrics``, ``/healthz`` and ``/readyz`` as a WSGI app, to mount in yours."""
        return wsgi_app(self.registry, self.health)

    def asgi_app(self) -> ASGIApp:
        """The same as :meth:`wsgi_app`, as an ASGI app."""
        return asgi_app(self.registry, self.health)

    def serve(self, *, port: int, host: str = "127.0.0.1") -> MetricsServer:
        """Serve :meth:`wsgi_app` on ``host:port`` in background threads (port 0: any
        free port, see :attr:`MetricsServer.port`); ``close()`` the result to stop."""
        return MetricsServer(self.wsgi_app(), host=host, port=port)

    def close(self) -> None:
        """Unsubscribe from the events and give up the cluster series' lock, so another
        node reports them at once."""
        self.node.close()
        if self.cluster is not None:
            try:
                self.store.release_lock(CLUSTER_LOCK, self.node_id)
            except Exception as exc:  # it expires by itself
                log.debug("Could not release %s: %s", CLUSTER_LOCK, redact(str(exc)))


def make_wsgi_app(source: Ratchet | Worker | RatchetMetrics) -> WSGIApp:
    """``/metrics``, ``/healthz`` and ``/readyz`` of an application, a worker, or a
    :class:`RatchetMetrics`, as a WSGI app (``RatchetMetrics(source).wsgi_app()``)."""
    metrics = source if isinstance(source, RatchetMetrics) else RatchetMetrics(source)
    return metrics.wsgi_app()


def make_asgi_app(source: Ratchet | Worker | RatchetMetrics) -> ASGIApp:
    """The same as :func:`make_wsgi_app`, as an ASGI app."""
    metrics = source if isinstance(source, RatchetMetrics) else RatchetMetrics(source)
    return metrics.asgi_app()

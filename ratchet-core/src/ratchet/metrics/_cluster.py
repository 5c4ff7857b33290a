"""Cluster series, read from the store at scrape time: jobs by status, the dead-letter
queue, how long each priority's oldest due job has waited, live and stale nodes.

These describe the whole cluster, so exactly one exporter should report them. Two ways:

* Every worker's ``/metrics`` includes them, but only the node that holds the store lock
  ``ratchet:metrics-cluster`` reports them: a scrape takes (or renews) the lock, and a
  node that does not get it leaves the series out. The lease lasts
  :data:`CLUSTER_LOCK_SECONDS`, so when the reporting node stops being scraped another
  takes over within that time. The values are read at most every ``cache_seconds`` and
  cached in between (the lease is always longer, so two nodes never both report cached
  values).
* ``ratchet metrics serve --store URL`` reports them with no lock: run one.

Each read costs ``count_jobs``, ``list_nodes``, ``list_stale_nodes`` and, on a store with
``SupportsPendingAges`` (every built-in one), ``oldest_pending_ages``: one indexed read
per priority, whatever the backlog. A store that cannot be read leaves the series out of
that scrape (logged once per streak of failures) and counts
``ratchet_cluster_read_errors_total``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import JobPriority, JobStatus
from ratchet.spi import JobStore, SupportsPendingAges, SupportsResourcePermits

__all__ = ["CLUSTER_LOCK", "CLUSTER_LOCK_SECONDS", "ClusterCollector", "ClusterSnapshot"]

log = get_logger("ratchet.metrics")

CLUSTER_LOCK = "ratchet:metrics-cluster"
CLUSTER_LOCK_SECONDS = 60.0
"""The lease of the node reporting the cluster series; longer than a scrape interval."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterSnapshot:
    """One read of the cluster's state."""

    jobs: dict[JobStatus, int]
    live_nodes: int
    stale_nodes: int
    pending_ages: dict[int, float] | None = None
    """Seconds the oldest due PENDING job of each priority has waited (absent: none is
    due); ``None`` when the store cannot say (no ``SupportsPendingAges``)."""
    permits: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    """Per configured resource: the permits held now and the limit stored (``None``: no
    worker has written it yet). Empty without ``SupportsResourcePermits``."""


class ClusterCollector(Collector):
    """The cluster series of ``store``, for a ``CollectorRegistry``.

    With ``lock_owner`` (a node id), they are reported only while that node holds
    :data:`CLUSTER_LOCK`; with ``None``, always (``ratchet metrics serve``). Nodes whose
    last heartbeat is older than ``grace_seconds`` count as stale (use the cluster's
    ``RATCHET_NODE_ORPHAN_GRACE_SECONDS``).
    """

    def __init__(
        self,
        store: JobStore,
        *,
        grace_seconds: float,
        lock_owner: str | None = None,
        cache_seconds: float = 10.0,
        lock_seconds: float = CLUSTER_LOCK_SECONDS,
        resources: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        if lock_owner is not None and not 0 <= cache_seconds < lock_seconds:
            raise ValueError(
                f"cache_seconds {cache_seconds!r} must be >= 0 and shorter than the lock's "
                f"lease lock_seconds {lock_seconds!r}, or two nodes could report at once."
            )
        self.store = store
        self.grace_seconds = grace_seconds
        self.lock_owner = lock_owner
        self.cache_seconds = cache_seconds
        self.lock_seconds = lock_seconds
        self.resources = resources
        self._lock = threading.Lock()
        self._cached: ClusterSnapshot | None = None
        self._cached_at = float("-inf")
        self._failing = False
        self.read_errors = 0

    def snapshot(self) -> ClusterSnapshot | None:
        """The cluster's state to report now, or ``None`` (another node reports it, or the
        store could not be read)."""
        with self._lock:
            now = time.monotonic()
            if self._cached is not None and now - self._cached_at < self.cache_seconds:
                return self._cached
            self._cached = None
            try:
                if self.lock_owner is not None and not self.store.try_lock(
                    CLUSTER_LOCK, self.lock_seconds, self.lock_owner
                ):
                    return None
                snapshot = self._read()
            except Exception as exc:
                self.read_errors += 1
                if not self._failing:
                    log.warning(
                        "Could not read the cluster series from %s (%s); they are left out "
                        "of the scrapes until the store answers.",
                        self.store.describe(),
                        redact(f"{type(exc).__name__}: {exc}"),
                    )
                self._failing = True
                return None
            self._failing = False
            self._cached, self._cached_at = snapshot, now
            return snapshot

    def _read(self) -> ClusterSnapshot:
        counts = self.store.count_jobs()
        nodes = self.store.list_nodes()
        stale = {node.node_id for node in self.store.list_stale_nodes(self.grace_seconds)}
        ages = (
            self.store.oldest_pending_ages()
            if isinstance(self.store, SupportsPendingAges)
            else None
        )
        return ClusterSnapshot(
            jobs={status: counts.get(status, 0) for status in JobStatus},
            live_nodes=sum(1 for node in nodes if node.node_id not in stale),
            stale_nodes=len(stale),
            pending_ages=ages,
            permits=self._permits(),
        )

    def _permits(self) -> dict[str, tuple[int, int | None]]:
        """Two reads per configured resource (its live holders, its stored limit)."""
        store = self.store
        if self.resources is None or not isinstance(store, SupportsResourcePermits):
            return {}
        return {
            name: (len(store.permit_holders(name)), store.resource_limit(name))
            for name in self.resources()
        }

    def describe(self) -> Iterable[Metric]:
        # The registry checks names with this, before any scrape: no store read here.
        empty = ClusterSnapshot(
            jobs=dict.fromkeys(JobStatus, 0),
            live_nodes=0,
            stale_nodes=0,
            pending_ages={} if isinstance(self.store, SupportsPendingAges) else None,
        )
        return list(self._families(empty))

    def collect(self) -> Iterable[Metric]:
        return list(self._families(self.snapshot()))

    def _families(self, snapshot: ClusterSnapshot | None) -> Iterable[Metric]:
        errors = CounterMetricFamily(
            "ratchet_cluster_read_errors",
            "Scrapes whose cluster series could not be read from the store.",
            value=self.read_errors,
        )
        yield errors
        if snapshot is None:
            return
        jobs = GaugeMetricFamily(
            "ratchet_jobs", "Live (not archived) jobs in the store, by status.", labels=["status"]
        )
        for status in JobStatus:
            jobs.add_metric([status.value], snapshot.jobs[status])
        yield jobs
        yield GaugeMetricFamily(
            "ratchet_dlq_jobs",
            "Jobs in the dead-letter queue (status FAILED).",
            value=snapshot.jobs[JobStatus.FAILED],
        )
        nodes = GaugeMetricFamily(
            "ratchet_nodes",
            "Registered nodes: live (heartbeat within the orphan grace) or stale.",
            labels=["state"],
        )
        nodes.add_metric(["live"], snapshot.live_nodes)
        nodes.add_metric(["stale"], snapshot.stale_nodes)
        yield nodes
        if snapshot.pending_ages is not None:
            ages = GaugeMetricFamily(
                "ratchet_oldest_pending_age_seconds",
                "How long the oldest due PENDING job of each priority has waited (database "
                "clock); 0 when none of that priority is due.",
                labels=["priority"],
            )
            for priority in JobPriority:
                ages.add_metric([priority.name], snapshot.pending_ages.get(int(priority), 0.0))
            yield ages
        if snapshot.permits:
            held = GaugeMetricFamily(
                "ratchet_resource_permits_held",
                "Permits of each configured resource held now, across the cluster.",
                labels=["resource"],
            )
            limits = GaugeMetricFamily(
                "ratchet_resource_limit",
                "The max_concurrent the store holds for each configured resource.",
                labels=["resource"],
            )
            for name, (count, limit) in sorted(snapshot.permits.items()):
                held.add_metric([name], count)
                if limit is not None:
                    limits.add_metric([name], limit)
            yield held
            yield limits

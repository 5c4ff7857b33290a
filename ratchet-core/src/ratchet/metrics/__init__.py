"""Prometheus metrics and health probes (the extra ``ratchet-core[prometheus]``).

    from ratchet.metrics import RatchetMetrics

    metrics = RatchetMetrics(app)                 # subscribes to app's events
    with app.worker() as worker:
        metrics.watch(worker)                     # /healthz and /readyz judge it
        server = metrics.serve(port=9464)         # or mount metrics.wsgi_app() / asgi_app()

``ratchet worker APP --metrics-port 9464`` does the same. The series (names, labels and
what they count) are described in :mod:`ratchet.metrics._node` (per node, from the
lifecycle events), :mod:`ratchet.metrics._cluster` (from the store, one reporter at a
time) and :mod:`ratchet.metrics._health` (the probes); the README lists them.
"""

from __future__ import annotations

try:
    import prometheus_client  # noqa: F401  (the import is the check)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "ratchet.metrics needs prometheus-client, which is not installed. Install the "
        "extra: pip install 'ratchet-core[prometheus]'."
    ) from exc

from ratchet.metrics._cluster import CLUSTER_LOCK, ClusterCollector, ClusterSnapshot
from ratchet.metrics._health import HealthAnswer, WorkerHealth
from ratchet.metrics._http import MetricsServer, asgi_app, wsgi_app
from ratchet.metrics._instrument import RatchetMetrics, make_asgi_app, make_wsgi_app
from ratchet.metrics._node import DURATION_BUCKETS, OUTCOMES

__all__ = [
    "CLUSTER_LOCK",
    "DURATION_BUCKETS",
    "OUTCOMES",
    "ClusterCollector",
    "ClusterSnapshot",
    "HealthAnswer",
    "MetricsServer",
    "RatchetMetrics",
    "WorkerHealth",
    "asgi_app",
    "make_asgi_app",
    "make_wsgi_app",
    "wsgi_app",
]

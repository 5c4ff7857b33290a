"""``ratchet worker --metrics-port`` and ``ratchet metrics serve``: the HTTP endpoints of
:mod:`ratchet.metrics` from the command line.

``--metrics-port N`` (else ``RATCHET_METRICS_PORT``) serves ``/metrics``, ``/healthz`` and
``/readyz`` next to the worker; port 0 picks a free one, which the log line names. It binds
127.0.0.1 unless ``--metrics-host`` (else ``RATCHET_METRICS_HOST``) says otherwise: the
series name your jobs, so exposing them beyond the machine is a choice to make.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

from ratchet._logs import get_logger
from ratchet.errors import ConfigurationError, RatchetError

if TYPE_CHECKING:
    from ratchet._app import Ratchet
    from ratchet._engine.worker import Worker
    from ratchet.metrics import MetricsServer, RatchetMetrics
    from ratchet.metrics._http import WSGIApp
    from ratchet.spi import JobStore

__all__ = [
    "WorkerEndpoints",
    "cmd_metrics_serve",
    "metrics_host",
    "metrics_port",
    "worker_endpoints",
]

log = get_logger("ratchet.cli")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_SERVE_PORT = 9464
MAX_PORT = 65535


def metrics_port(given: int | None) -> int | None:
    """``--metrics-port``, else ``RATCHET_METRICS_PORT``, else ``None`` (no endpoints)."""
    if given is not None:
        return given
    raw = os.environ.get("RATCHET_METRICS_PORT", "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 0 <= port <= MAX_PORT:
        raise ConfigurationError(
            f"RATCHET_METRICS_PORT is {raw!r}, which is not a port: set a whole number from "
            f"0 to {MAX_PORT} (0 picks a free port), for example {DEFAULT_SERVE_PORT}, or "
            "unset it to serve no metrics."
        )
    return port


def metrics_host(given: str | None) -> str:
    """``--metrics-host``, else ``RATCHET_METRICS_HOST``, else 127.0.0.1."""
    return given or os.environ.get("RATCHET_METRICS_HOST", "").strip() or DEFAULT_HOST


def _metrics_module_missing(flag: str) -> RatchetError:
    return RatchetError(
        f"{flag} needs prometheus-client, which is not installed. Install the extra: "
        "pip install 'ratchet-core[prometheus]'."
    )


def _serve(app_wsgi: WSGIApp, host: str, port: int) -> MetricsServer:
    from ratchet.metrics import MetricsServer

    try:
        return MetricsServer(app_wsgi, host=host, port=port)
    except OSError as exc:
        raise RatchetError(str(exc)) from exc


class WorkerEndpoints:
    """The endpoints of one ``ratchet worker``: started before the worker (``/readyz``
    answers 503 while it starts), closed after its drain."""

    def __init__(self, metrics: RatchetMetrics, server: MetricsServer) -> None:
        self.metrics = metrics
        self.server = server

    def watch(self, worker: Worker) -> None:
        self.metrics.watch(worker)

    def __enter__(self) -> WorkerEndpoints:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.server.close()
        self.metrics.close()


def worker_endpoints(args: argparse.Namespace, app: Ratchet) -> WorkerEndpoints | None:
    """The endpoints ``ratchet worker`` was asked for, serving already; ``None`` for none."""
    port = metrics_port(args.metrics_port)
    if port is None:
        return None
    try:
        from ratchet.metrics import RatchetMetrics
    except ImportError:
        raise _metrics_module_missing("--metrics-port") from None
    metrics = RatchetMetrics(app)
    try:
        server = _serve(metrics.wsgi_app(), metrics_host(args.metrics_host), port)
    except BaseException:
        metrics.close()
        raise
    log.info(
        "Serving /metrics, /healthz and /readyz at %s.",
        server.url,
        extra={"event": "metrics_serving", "node_id": app.node_id},
    )
    return WorkerEndpoints(metrics, server)


def cmd_metrics_serve(
    args: argparse.Namespace, open_store: Callable[[argparse.Namespace], JobStore]
) -> int:
    """Serve the cluster series of the store ``open_store(args)`` opens (no lock: run one
    of these per cluster) until SIGINT or SIGTERM. ``open_store`` is passed in, not
    imported: :mod:`ratchet.cli._commands` imports this module."""
    try:
        from prometheus_client import CollectorRegistry

        from ratchet.metrics import ClusterCollector, wsgi_app
    except ImportError:
        raise _metrics_module_missing("'ratchet metrics serve'") from None
    from ratchet._config import RatchetOptions

    store = open_store(args)
    grace = args.grace if args.grace is not None else RatchetOptions.from_env().orphan_grace_seconds
    registry = CollectorRegistry()
    registry.register(ClusterCollector(store, grace_seconds=grace, cache_seconds=0.0))
    port = metrics_port(args.port)
    server = _serve(
        wsgi_app(registry),
        metrics_host(args.host),
        DEFAULT_SERVE_PORT if port is None else port,
    )
    stop = threading.Event()

    def stop_on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, stop_on_signal)
    log.info(
        "Serving the cluster series of %s at %s/metrics; Ctrl-C stops.",
        store.describe(),
        server.url,
    )
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
        store.close()
    return 0

"""``/metrics``, ``/healthz`` and ``/readyz`` as a WSGI app, an ASGI app, and a small
threaded server (what ``ratchet worker --metrics-port`` runs).

``/metrics`` is prometheus_client's own exposition of the registry (text format, or
OpenMetrics when the scraper asks, gzip when accepted). Any other path answers 404.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import prometheus_client
from prometheus_client import CollectorRegistry

from ratchet._logs import get_logger
from ratchet.metrics._health import HealthAnswer, WorkerHealth

__all__ = ["MetricsServer", "asgi_app", "wsgi_app"]

log = get_logger("ratchet.metrics")

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
Scope = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[dict[str, Any]], Awaitable[None]]],
    Awaitable[None],
]

_JSON = "application/json"
_NOT_FOUND = b"Not found: this server answers /metrics, /healthz and /readyz.\n"


def _probe(health: WorkerHealth | None, path: str) -> HealthAnswer | None:
    """The answer to a probe path, or ``None`` for a path that is no probe."""
    if path == "/healthz":
        return health.live() if health is not None else HealthAnswer(ok=True, reason="serving")
    if path == "/readyz":
        return health.ready() if health is not None else HealthAnswer(ok=True, reason="serving")
    return None


def _body(answer: HealthAnswer) -> bytes:
    return (json.dumps(answer.as_json()) + "\n").encode()


def _status_line(code: int) -> str:
    return {200: "200 OK", 404: "404 Not Found", 503: "503 Service Unavailable"}[code]


def wsgi_app(registry: CollectorRegistry, health: WorkerHealth | None = None) -> WSGIApp:
    """A WSGI app serving ``registry`` at ``/metrics`` and ``health`` at the probes (with
    no ``health``, both probes answer 200: the process serves)."""
    metrics = prometheus_client.make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            result: Iterable[bytes] = metrics(environ, start_response)
            return result
        answer = _probe(health, path)
        if answer is None:
            start_response(_status_line(404), [("Content-Type", "text/plain")])
            return [_NOT_FOUND]
        body = _body(answer)
        start_response(
            _status_line(answer.status_code),
            [("Content-Type", _JSON), ("Content-Length", str(len(body)))],
        )
        return [body]

    return app


def asgi_app(registry: CollectorRegistry, health: WorkerHealth | None = None) -> ASGIApp:
    """The same as :func:`wsgi_app`, for ASGI servers and frameworks (mount it under a
    prefix: paths are matched relative to the mount's ``root_path``)."""
    metrics = prometheus_client.make_asgi_app(registry)

    async def app(
        scope: Scope,
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            raise ValueError(f"ratchet.metrics serves HTTP only, not {scope['type']!r}.")
        path: str = scope.get("path", "/")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        if path == "/metrics":
            await metrics(scope, receive, send)
            return
        answer = _probe(health, path)
        if answer is None:
            code, body, kind = 404, _NOT_FOUND, b"text/plain"
        else:
            code, body, kind = answer.status_code, _body(answer), _JSON.encode()
        await send(
            {
                "type": "http.response.start",
                "status": code,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper never holds the process open


class _ThreadingServerIPv6(_ThreadingServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None  # a scrape every few seconds is not worth a log line


class MetricsServer:
    """``app`` (WSGI) served on ``host:port`` by daemon threads until :meth:`close`.

    Port 0 picks a free port: read :attr:`port` after construction.
    """

    def __init__(self, app: WSGIApp, *, host: str = "127.0.0.1", port: int = 0) -> None:
        try:
            self._server = make_server(
                host,
                port,
                app,
                server_class=_ThreadingServerIPv6 if ":" in host else _ThreadingServer,
                handler_class=_QuietHandler,
            )
        except OSError as exc:
            raise OSError(
                f"Could not serve metrics on {host}:{port} ({exc.strerror or exc}). Choose "
                "another port (--metrics-port, RATCHET_METRICS_PORT) or stop what uses it."
            ) from exc
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ratchet-metrics-http", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

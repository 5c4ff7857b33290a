"""Prometheus series and health probes (issue #16, "Prometheus and health").

When one of these fails, look at ``ratchet.metrics._node`` (per-node series from the
lifecycle events), ``ratchet.metrics._cluster`` (store series under the lock),
``ratchet.metrics._health`` (what /healthz and /readyz answer), ``ratchet.metrics._http``
(the WSGI/ASGI apps and the server) and ``ratchet.cli._metrics`` (the command line).
Scrapes are parsed with ``prometheus_client.parser``. The SIGSTOP scenario is in
``test_cluster.py`` (``test_healthz_turns_503_when_a_frozen_node_is_fenced_out``).
Waits are failure bounds only; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults, shift_path_info

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from conftest import FAST
from ratchet import DoNotRetry, JobPriority, Ratchet, Snooze, current_job
from ratchet.metrics import CLUSTER_LOCK, OUTCOMES, ClusterCollector, RatchetMetrics
from ratchet.spi import SupportsResourcePermits
from ratchet_tck.loopback import LoopbackBus, LoopbackClusterCoordinator

BOUND = 30.0
ROOT = Path(__file__).resolve().parents[2]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def parse(text: str) -> Samples:
    """``{(sample name, sorted labels): value}`` of one exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def of(samples: Samples, name: str, label: str) -> dict[str, float]:
    """``{label value: sample value}`` of one sample name (other labels must be alike)."""
    return {dict(key[1])[label]: v for key, v in samples.items() if key[0] == name}


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=BOUND) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def probe(url: str) -> tuple[int, str]:
    """A probe's status code and reason."""
    code, body = get(url)
    return code, json.loads(body)["reason"]


@pytest.fixture(params=["memory", "sqlite"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ratchet]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'metrics.db'}"
    application = Ratchet(url, **FAST)
    yield application
    application.close()


# -- a scripted run, scraped ------------------------------------------------------------------


def test_a_scripted_run_has_exact_counts(app: Ratchet) -> None:
    """Every outcome once (twice for successes), scraped over HTTP: each counter, each
    histogram's count and the running gauge hold exactly what happened."""
    metrics = RatchetMetrics(app, cluster_cache_seconds=0.0)
    store = app.store

    @app.job(name="left")
    def left() -> None: ...

    # A previous run of this node id claimed it and died: recovered at start (crashed).
    left.enqueue()
    [claimed] = store.claim_due_jobs(
        node_id=app.node_id, limit=1, start_now=1, priority_boost_seconds=0
    )

    @app.job(name="ok")
    def ok(n: int) -> int:
        return n

    calls: list[int] = []

    @app.job(name="flaky", max_retries=3, backoff_ms=10)
    def flaky() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("down")

    @app.job(name="broken", max_retries=1, backoff_ms=1)
    def broken() -> None:
        raise ValueError("bad row")

    @app.job(name="refuse", max_retries=5)
    def refuse() -> None:
        raise DoNotRetry("declined")

    @app.job(name="later")
    def later() -> None: ...

    @app.job(name="nap")
    def nap() -> None:
        raise Snooze(3600)  # back to the queue, due in an hour: no longer running here

    @app.job(name="slow")
    def slow() -> None:
        job = current_job()  # loses its claim to another node before it returns: stale
        assert store.release_claim(job.id, job.claim_seq, message="taken away")
        [stolen] = store.claim_due_jobs(
            node_id="another-node", limit=1, start_now=1, priority_boost_seconds=0
        )
        assert stolen.claim_seq == job.claim_seq + 1

    store.register_node("another-node")  # alive, so its claim is not recovered here
    for n in range(3):
        ok.enqueue(n)
    flaky.enqueue()
    broken.enqueue()
    refuse.enqueue()
    nap.enqueue()
    assert app.cancel_job(app.builder(later).delay(seconds=3600).submit())
    app.run_until_idle(timeout=BOUND)
    slow.enqueue()  # alone, so the steal below takes this job and no other
    app.run_until_idle(timeout=BOUND, wait_for_retries=False)
    assert app.get_job(claimed.id).status.value == "SUCCEEDED"  # type: ignore[union-attr]

    with metrics.serve(port=0) as server:
        code, text = get(server.url + "/metrics")
    assert code == 200
    samples = parse(text)
    names = ["left", "ok", "flaky", "broken", "refuse", "nap", "later", "slow"]
    assert of(samples, "ratchet_jobs_enqueued_total", "job") == dict.fromkeys(names, 1.0) | {
        "ok": 3.0
    }
    attempts = {
        (dict(k[1])["job"], dict(k[1])["outcome"]): v
        for k, v in samples.items()
        if k[0] == "ratchet_job_attempts_total"
    }
    assert attempts == {
        ("", "crashed"): 1,
        ("left", "succeeded"): 1,
        ("ok", "succeeded"): 3,
        ("flaky", "retried"): 1,
        ("flaky", "succeeded"): 1,
        ("broken", "retried"): 1,
        ("broken", "dead_lettered"): 1,
        ("refuse", "dead_lettered"): 1,
        ("nap", "snoozed"): 1,
        ("later", "canceled"): 1,
        ("slow", "stale"): 1,
    }
    assert {outcome for _, outcome in attempts} == set(OUTCOMES)
    assert of(samples, "ratchet_job_duration_seconds_count", "job") == {
        "left": 1,
        "ok": 3,
        "flaky": 2,
        "broken": 2,
        "refuse": 1,
    }
    assert of(samples, "ratchet_job_queue_wait_seconds_count", "job") == {
        "left": 1,
        "ok": 3,
        "flaky": 2,
        "broken": 2,
        "refuse": 1,
        "nap": 1,
        "slow": 1,
    }
    inf = {
        dict(k[1])["job"]: v
        for k, v in samples.items()
        if k[0] == "ratchet_job_duration_seconds_bucket" and dict(k[1])["le"] == "+Inf"
    }
    assert inf == of(samples, "ratchet_job_duration_seconds_count", "job")
    assert set(of(samples, "ratchet_jobs_running", "job").values()) == {0.0}
    # The cluster series: this node holds the lock, so it reports them.
    assert of(samples, "ratchet_jobs", "status") == {
        "PENDING": 1,  # nap, snoozed for an hour
        "RUNNING": 1,  # slow, claimed by another-node
        "SUCCEEDED": 5,
        "FAILED": 2,
        "CANCELED": 1,
        "PAUSED": 0,
        "WAITING": 0,
    }
    assert value(samples, "ratchet_dlq_jobs") == 2
    assert value(samples, "ratchet_store_errors_total") is None  # no store error happened
    metrics.close()


def test_running_jobs_are_counted_while_they_run(app: Ratchet) -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    @app.job(name="hold")
    def hold() -> None:
        started.release()
        release.wait(BOUND)

    metrics = RatchetMetrics(app, cluster=False)
    for _ in range(2):
        hold.enqueue()
    with app.worker(concurrency=4):
        for _ in range(2):
            assert started.acquire(timeout=BOUND)
        running = parse(generate_latest(metrics.registry).decode())
        release.set()
    assert value(running, "ratchet_jobs_running", job="hold") == 2
    after = parse(generate_latest(metrics.registry).decode())
    assert value(after, "ratchet_jobs_running", job="hold") == 0


def test_store_errors_are_counted_by_operation(app: Ratchet) -> None:
    """Three failed claims in a streak, then recovery: exactly three errors, labelled with
    the operation."""
    store: Any = app.store
    claim = store.claim_due_jobs
    failures = {"left": 3}

    def flaky_claim(**kwargs: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("database restarting")
        return claim(**kwargs)

    store.claim_due_jobs = flaky_claim
    metrics = RatchetMetrics(app, cluster=False)

    def errors() -> dict[str, float]:
        text = generate_latest(metrics.registry).decode()
        return of(parse(text), "ratchet_store_errors_total", "operation")

    with app.worker():
        wait_for(lambda: sum(errors().values()) == 3, "three errors counted")
    assert errors() == {"claim jobs": 3}


def test_coordinator_hints_are_counted() -> None:
    bus = LoopbackBus()
    a = Ratchet(
        "memory://", node_id="node-a", coordinator=LoopbackClusterCoordinator(bus, "node-a")
    )
    b = Ratchet(
        "memory://", node_id="node-b", coordinator=LoopbackClusterCoordinator(bus, "node-b")
    )
    try:
        metrics_a, metrics_b = RatchetMetrics(a, cluster=False), RatchetMetrics(b, cluster=False)
        a.job(name="x")(lambda: None)
        a.enqueue("x")
        a.enqueue("x")

        def hints(metrics: RatchetMetrics) -> dict[str, float]:
            text = generate_latest(metrics.registry).decode()
            return of(parse(text), "ratchet_coordinator_hints_total", "direction")

        wait_for(lambda: hints(metrics_b)["received"] == 2, "B to receive both hints")
        assert hints(metrics_a) == {"sent": 2, "received": 0}
        assert hints(metrics_b) == {"sent": 0, "received": 2}
    finally:
        a.close()
        b.close()
        bus.close()


class _SwitchableCoordinator(LoopbackClusterCoordinator):
    """A loopback coordinator with the optional ``ready`` property, switched by the test."""

    connected = True

    @property
    def ready(self) -> bool:
        return self.connected


def test_coordinator_connected_follows_its_ready_property() -> None:
    """1 while the coordinator says it receives hints, 0 when it stops; a coordinator
    without ``ready`` (the plain loopback one) exports no such series at all."""
    bus = LoopbackBus()
    switchable = _SwitchableCoordinator(bus, "node-a")
    with_ready = Ratchet("memory://", node_id="node-a", coordinator=switchable)
    without = Ratchet(
        "memory://", node_id="node-b", coordinator=LoopbackClusterCoordinator(bus, "node-b")
    )
    try:
        metrics = RatchetMetrics(with_ready, cluster=False)

        def connected() -> dict[str, float]:
            text = generate_latest(metrics.registry).decode()
            return of(parse(text), "ratchet_coordinator_connected", "coordinator")

        assert connected() == {"_SwitchableCoordinator": 1.0}
        switchable.connected = False
        assert connected() == {"_SwitchableCoordinator": 0.0}
        plain = generate_latest(RatchetMetrics(without, cluster=False).registry).decode()
        assert "ratchet_coordinator_connected" not in plain
    finally:
        with_ready.close()
        without.close()
        bus.close()


# -- labels ------------------------------------------------------------------------------------

ALLOWED_LABELS = {
    "job",
    "outcome",
    "operation",
    "status",
    "state",
    "direction",
    "kind",
    "le",
    "priority",
    "coordinator",
}


def test_labels_never_carry_ids_keys_or_tags(app: Ratchet) -> None:
    """A job with a business key, an idempotency key and tags runs and fails once: its
    name is in the exposition, its id, keys, tags and the node id are not."""
    calls: list[int] = []

    @app.job(name="refund", max_retries=2, backoff_ms=1)
    def refund(order: int) -> None:
        calls.append(order)
        if len(calls) == 1:
            raise RuntimeError("retry me")

    job_id = (
        app.builder(refund, 42)
        .business_key("refund-order-4242")
        .idempotency_key("request-9999")
        .tags("billing-team")
        .submit()
    )
    metrics = RatchetMetrics(app, cluster_cache_seconds=0.0)
    with app.worker() as worker:
        metrics.watch(worker)
        wait_for(lambda: app.get_job(job_id).status.value == "SUCCEEDED", "the job")  # type: ignore[union-attr]
        text = generate_latest(metrics.registry).decode()
    assert 'job="refund"' in text  # the check below reads the right text
    for secret in (job_id, "refund-order-4242", "request-9999", "billing-team", app.node_id):
        assert secret not in text
    labels = {
        label
        for family in text_string_to_metric_families(text)
        for s in family.samples
        for label in s.labels
    }
    assert labels <= ALLOWED_LABELS, labels - ALLOWED_LABELS
    metrics.close()


# -- cluster series ----------------------------------------------------------------------------


def _cluster_fixture(app: Ratchet) -> None:
    app.job(name="work", max_retries=0)(lambda: None)
    app.job(name="boom", max_retries=0)(lambda: 1 / 0)
    for _ in range(3):
        app.builder("work").delay(seconds=3600).submit()
    app.enqueue("boom")
    app.run_until_idle(timeout=BOUND)


def test_only_the_lock_holder_reports_the_cluster_series(sqlite_url: str) -> None:
    """Two nodes' collectors on one store: one scrape each, exactly one reports; when it
    gives up the lock, the other reports at its next scrape."""
    one, two = Ratchet(sqlite_url, **FAST), Ratchet(sqlite_url, **FAST)
    try:
        _cluster_fixture(one)
        first = RatchetMetrics(one, cluster_cache_seconds=0.0)
        second = RatchetMetrics(two, cluster_cache_seconds=0.0)

        def reports(metrics: RatchetMetrics) -> bool:
            samples = parse(generate_latest(metrics.registry).decode())
            if value(samples, "ratchet_dlq_jobs") is None:
                assert not of(samples, "ratchet_jobs", "status")
                return False
            assert value(samples, "ratchet_dlq_jobs") == 1
            assert of(samples, "ratchet_jobs", "status")["PENDING"] == 3
            return True

        assert [reports(first), reports(second)] == [True, False]
        assert [reports(first), reports(second)] == [True, False]  # renewed, still one
        first.close()  # releases the lock
        assert reports(second)
        assert not RatchetMetrics(one, cluster_cache_seconds=0.0).cluster.snapshot()  # type: ignore[union-attr]
        second.close()
    finally:
        one.close()
        two.close()


def test_negative_control_without_the_lock_both_report(sqlite_url: str) -> None:
    app = Ratchet(sqlite_url, **FAST)
    try:
        _cluster_fixture(app)
        collectors = [
            ClusterCollector(app.store, grace_seconds=60, lock_owner=None, cache_seconds=0)
            for _ in range(2)
        ]
        assert all(c.snapshot() is not None for c in collectors)
        assert app.store.try_lock(CLUSTER_LOCK, 60, "somebody-else")
        assert all(c.snapshot() is not None for c in collectors)  # the lock is not asked
    finally:
        app.close()


def test_oldest_pending_age_by_priority(app: Ratchet) -> None:
    """Every priority is reported, 0 when none of it is due; the age is the oldest due
    job's wait. A store without ``SupportsPendingAges`` leaves the series out."""
    store = app.store
    now = store.database_time()
    app.job(name="w")(lambda: None)
    app.builder("w").priority(JobPriority.HIGH).at(now - timedelta(seconds=120)).submit()
    app.builder("w").priority(JobPriority.HIGH).at(now - timedelta(seconds=30)).submit()
    app.builder("w").priority(JobPriority.LOW).at(now + timedelta(hours=1)).submit()
    registry = CollectorRegistry()
    registry.register(ClusterCollector(store, grace_seconds=60, cache_seconds=0))
    ages = of(
        parse(generate_latest(registry).decode()), "ratchet_oldest_pending_age_seconds", "priority"
    )
    assert set(ages) == {p.name for p in JobPriority}
    assert 120 <= ages["HIGH"] < 180, ages
    assert all(ages[p.name] == 0 for p in JobPriority if p is not JobPriority.HIGH), ages

    class WithoutAges:  # the store's reads, but not the capability
        def __getattr__(self, name: str) -> Any:
            if name == "oldest_pending_ages":
                raise AttributeError(name)
            return getattr(store, name)

    plain = CollectorRegistry()
    plain.register(ClusterCollector(WithoutAges(), grace_seconds=60, cache_seconds=0))  # type: ignore[arg-type]
    text = generate_latest(plain).decode()
    assert "ratchet_dlq_jobs" in text and "ratchet_oldest_pending_age_seconds" not in text


def test_live_and_stale_nodes(app: Ratchet) -> None:
    store = app.store
    store.register_node("old-node")
    time.sleep(0.3)
    store.register_node("new-node")
    registry = CollectorRegistry()
    registry.register(ClusterCollector(store, grace_seconds=0.2, cache_seconds=0))
    samples = parse(generate_latest(registry).decode())
    assert of(samples, "ratchet_nodes", "state") == {"live": 1, "stale": 1}


def test_metrics_serve_reports_a_store(sqlite_url: str, tmp_path: Path) -> None:
    """``ratchet metrics serve --store URL`` in a subprocess: scraped, exact, stops on
    SIGTERM with status 0."""
    app = Ratchet(sqlite_url, **FAST)
    _cluster_fixture(app)
    app.close()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ratchet.cli",
            "metrics",
            "serve",
            "--store",
            sqlite_url,
            "--port",
            "0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _served_url(server)
        assert url.startswith("http://127.0.0.1:")
        code, text = get(url + "/metrics")
        assert code == 200
        samples = parse(text)
        assert of(samples, "ratchet_jobs", "status") == {
            "PENDING": 3,
            "RUNNING": 0,
            "SUCCEEDED": 0,
            "FAILED": 1,
            "CANCELED": 0,
            "PAUSED": 0,
            "WAITING": 0,
        }
        assert value(samples, "ratchet_dlq_jobs") == 1
        assert of(samples, "ratchet_nodes", "state") == {"live": 0, "stale": 0}
        assert probe(url + "/healthz") == (200, "serving")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=BOUND) == 0
    finally:
        server.kill()
        server.wait()


def _served_url(process: subprocess.Popen[str]) -> str:
    """The URL a ``ratchet`` process logged it serves at."""
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if match := re.search(r"(http://[\w.\[\]:-]+:\d+)", line):
            threading.Thread(target=process.stderr.read, daemon=True).start()  # keep draining
            return match.group(1)
    raise AssertionError("the process never said where it serves:\n" + "".join(seen))


# -- health probes -----------------------------------------------------------------------------


def test_healthz_turns_503_when_the_heartbeat_is_lost_and_back_when_it_returns(
    tmp_path: Path,
) -> None:
    """Heartbeats fail past the grace: /healthz and /readyz 503 (heartbeat_lost); they
    succeed again: 503 (fenced_out) for one grace, then 200."""
    app = Ratchet(f"sqlite:///{tmp_path / 'h.db'}", **FAST, orphan_grace_seconds=0.6)
    metrics = RatchetMetrics(app, cluster=False)
    try:
        with app.worker() as worker, metrics.serve(port=0) as server:
            metrics.watch(worker)
            healthz, readyz = server.url + "/healthz", server.url + "/readyz"
            assert probe(healthz) == (200, "heartbeat_fresh")
            assert probe(readyz) == (200, "ready")
            beat = worker.heartbeat.store.heartbeat

            def down(node_id: str) -> None:
                raise ConnectionError("network partition")

            worker.heartbeat.store.heartbeat = down  # type: ignore[method-assign]
            wait_for(lambda: probe(healthz) == (503, "heartbeat_lost"), "503")
            assert probe(readyz) == (503, "heartbeat_lost")
            worker.heartbeat.store.heartbeat = beat  # type: ignore[method-assign]
            wait_for(lambda: probe(healthz) == (503, "fenced_out"), "the rejoin window")
            wait_for(lambda: probe(healthz) == (200, "heartbeat_fresh"), "200 again")
            _, body = get(healthz)
            answer = json.loads(body)
            assert answer["status"] == "ok" and answer["node_id"] == app.node_id
            assert 0 <= answer["heartbeat_age_seconds"] < 0.6
    finally:
        metrics.close()
        app.close()


def test_readyz_turns_503_while_draining(app: Ratchet) -> None:
    """A drain waits for a running job: meanwhile /readyz is 503 (draining) and /healthz
    stays 200; once stopped, both 503."""
    release, started = threading.Event(), threading.Event()

    @app.job(name="hold")
    def hold() -> None:
        started.set()
        release.wait(BOUND)

    hold.enqueue()
    metrics = RatchetMetrics(app, cluster=False)
    worker = app.worker()
    with metrics.serve(port=0) as server:
        healthz, readyz = server.url + "/healthz", server.url + "/readyz"
        assert probe(readyz) == (503, "starting")
        worker.start()
        metrics.watch(worker)
        assert started.wait(BOUND)
        assert probe(readyz) == (200, "ready")
        stopper = threading.Thread(target=worker.stop, kwargs={"timeout": BOUND})
        stopper.start()
        wait_for(lambda: probe(readyz) == (503, "draining"), "the drain")
        assert probe(healthz) == (200, "heartbeat_fresh")
        release.set()
        stopper.join(BOUND)
        assert probe(healthz) == (503, "stopped")
        assert probe(readyz) == (503, "stopped")
        samples = parse(get(server.url + "/metrics")[1])
    assert (value(samples, "ratchet_worker_live"), value(samples, "ratchet_worker_ready")) == (0, 0)
    metrics.close()


# -- mounting in a user's app ------------------------------------------------------------------


def test_wsgi_mounted_under_a_prefix(app: Ratchet) -> None:
    metrics = RatchetMetrics(app, cluster=False)
    app.job(name="x")(lambda: None)
    app.enqueue("x")
    ours = metrics.wsgi_app()

    def user_app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["PATH_INFO"].startswith("/ops/"):
            shift_path_info(environ)  # what a WSGI dispatcher does for a mount
            return ours(environ, start_response)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"home"]

    def call(path: str) -> tuple[str, bytes]:
        environ: dict[str, Any] = {"PATH_INFO": path}
        setup_testing_defaults(environ)
        status: list[str] = []
        body = b"".join(user_app(environ, lambda s, h, *_: status.append(s)))
        return status[0], body

    status, body = call("/ops/metrics")
    assert status.startswith("200")
    assert value(parse(body.decode()), "ratchet_jobs_enqueued_total", job="x") == 1
    assert call("/ops/healthz")[0].startswith("200")
    assert call("/ops/readyz")[0].startswith("503")  # no worker watched yet
    assert call("/ops/nothing")[0].startswith("404")
    assert call("/")[1] == b"home"
    metrics.close()


def test_asgi_mounted_under_a_prefix(app: Ratchet) -> None:
    metrics = RatchetMetrics(app, cluster=False)
    app.job(name="x")(lambda: None)
    app.enqueue("x")
    ours = metrics.asgi_app()

    async def call(path: str) -> tuple[int, bytes]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {  # as Starlette's Mount("/ops", app=ours) passes it
            "type": "http",
            "method": "GET",
            "path": path,
            "root_path": "/ops",
            "query_string": b"",
            "headers": [],
        }
        await ours(scope, receive, send)
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return status, body

    status, body = asyncio.run(call("/ops/metrics"))
    assert status == 200
    assert value(parse(body.decode()), "ratchet_jobs_enqueued_total", job="x") == 1
    assert asyncio.run(call("/ops/healthz"))[0] == 200
    assert asyncio.run(call("/ops/readyz"))[0] == 503
    assert asyncio.run(call("/ops/other"))[0] == 404
    metrics.close()


# -- the command line --------------------------------------------------------------------------

WORKER_APP = """
from ratchet import Ratchet

app = Ratchet({url!r}, poll_burst_seconds=0.02, poll_idle_max_seconds=0.2,
              heartbeat_interval_seconds=0.2, coordinator="none")
app.job(name="add")(lambda a, b: a + b)
"""


def _listening_address(port: int) -> str | None:
    """The local address (hex, as /proc/net/tcp spells it) listening on ``port``."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:
                return address
    return None


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp (Linux)")
@pytest.mark.parametrize(("host", "bound"), [(None, "0100007F"), ("0.0.0.0", "00000000")])
def test_worker_metrics_port_binds_loopback_unless_told(
    sqlite_url: str, tmp_path: Path, host: str | None, bound: str
) -> None:
    """``ratchet worker APP --metrics-port 0`` listens on 127.0.0.1 only; the negative
    control with RATCHET_METRICS_HOST=0.0.0.0 listens on every address."""
    (tmp_path / "metrics_app.py").write_text(WORKER_APP.format(url=sqlite_url))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "RATCHET_SHUTDOWN_TIMEOUT_SECONDS": "1"}
    env.pop("RATCHET_METRICS_HOST", None)
    if host is not None:
        env["RATCHET_METRICS_HOST"] = host
    client = Ratchet(sqlite_url, coordinator="none")
    job_id = client.job(name="add")(lambda a, b: a + b).enqueue(2, 3)
    worker = subprocess.Popen(
        [sys.executable, "-m", "ratchet.cli", "worker", "metrics_app:app", "--metrics-port", "0"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _served_url(worker)
        port = int(url.rpartition(":")[2])
        assert _listening_address(port) == bound
        local = f"http://127.0.0.1:{port}"
        wait_for(lambda: probe(local + "/readyz") == (200, "ready"), "the worker to be ready")
        wait_for(lambda: client.get_job(job_id).result == 5, "the job")  # type: ignore[union-attr]
        samples = parse(get(local + "/metrics")[1])
        assert value(samples, "ratchet_job_attempts_total", job="add", outcome="succeeded") == 1
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=BOUND) == 0
    finally:
        worker.kill()
        worker.wait()
        client.close()


def test_a_bad_metrics_port_variable_names_itself(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from ratchet.cli import main

    (tmp_path / "port_app.py").write_text(WORKER_APP.format(url=sqlite_url))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RATCHET_METRICS_PORT", "http")
    assert main(["worker", "port_app:app"]) == 2
    assert "RATCHET_METRICS_PORT is 'http'" in capsys.readouterr().err


def test_a_missing_prometheus_client_is_a_clear_error(tmp_path: Path, sqlite_url: str) -> None:
    """Without prometheus-client: ``import ratchet.metrics`` and ``--metrics-port`` say
    which extra to install; ratchet itself and a worker without the option still work."""
    (tmp_path / "no_prom_app.py").write_text(WORKER_APP.format(url=sqlite_url))
    script = tmp_path / "no_prometheus.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys

            class NoPrometheus:
                def find_spec(self, name, path=None, target=None):
                    if name == "prometheus_client" or name.startswith("prometheus_client."):
                        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                    return None

            sys.meta_path.insert(0, NoPrometheus())
            from ratchet import Ratchet
            from ratchet.cli import main

            app = Ratchet("memory://", coordinator="none")
            app.job(name="x")(lambda: None)
            app.enqueue("x")
            assert app.run_until_idle(timeout=30) == 1
            try:
                import ratchet.metrics
            except ImportError as exc:
                print("import:", exc)
            print("exit:", main(["worker", "no_prom_app:app", "--metrics-port", "0"]))
            """
        )
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert "import: ratchet.metrics needs prometheus-client" in result.stdout
    assert "pip install 'ratchet-core[prometheus]'" in result.stdout
    assert "exit: 2" in result.stdout
    assert "--metrics-port needs prometheus-client" in result.stderr


# -- the dashboard and the alert rules ---------------------------------------------------------


def exported_names() -> set[str]:
    """Every sample name Ratchet can export, from registries with every series present."""
    app = Ratchet("memory://", **FAST)
    bus = LoopbackBus()
    hinted = Ratchet("memory://", coordinator=_SwitchableCoordinator(bus, "n"), node_id="n")
    try:
        metrics = RatchetMetrics(app, cluster_cache_seconds=0.0)
        app.job(name="x")(lambda: None)
        app.enqueue("x")
        app.run_until_idle(timeout=BOUND)
        with app.worker() as worker:
            metrics.watch(worker)
            names = {key[0] for key in parse(generate_latest(metrics.registry).decode())}
        hints = RatchetMetrics(hinted, cluster=False)
        names |= {key[0] for key in parse(generate_latest(hints.registry).decode())}
        # Labelled families with no sample yet: their names as the exposition would give.
        for family in ("ratchet_store_errors", "ratchet_job_callback_failures"):
            names |= {f"{family}_total", f"{family}_created"}
        return names
    finally:
        app.close()
        hinted.close()
        bus.close()


def _metric_names(expression: str) -> set[str]:
    return set(re.findall(r"\bratchet_[a-z_]+\b", expression))


def test_the_alert_rules_use_only_exported_series() -> None:
    rules = yaml.safe_load((ROOT / "docs/prometheus/ratchet-alerts.yml").read_text())
    alerts = {
        rule["alert"]: rule
        for group in rules["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    assert {
        "RatchetDeadLetterQueueGrowing",
        "RatchetOldestPendingJobTooOld",
        "RatchetNoLiveNode",
    } <= set(alerts)
    exported = exported_names()
    for name, rule in alerts.items():
        used = _metric_names(rule["expr"])
        assert used, f"{name} uses no Ratchet series"
        assert used <= exported, f"{name} uses {used - exported}, which Ratchet does not export"
        assert rule["labels"]["severity"] and rule["annotations"]["summary"]
    assert "ratchet_no_such_series" not in exported  # the check can fail


def test_the_grafana_dashboard_uses_only_exported_series() -> None:
    dashboard = json.loads((ROOT / "docs/grafana/ratchet-dashboard.json").read_text())
    assert dashboard["title"] and dashboard["schemaVersion"] >= 30
    expressions = [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "expr" in target
    ]
    assert len(expressions) >= 8
    exported = exported_names()
    used = set().union(*(_metric_names(e) for e in expressions))
    assert used <= exported, used - exported
    for series in ("ratchet_job_attempts_total", "ratchet_dlq_jobs", "ratchet_nodes"):
        assert series in used


def test_the_cluster_series_count_each_resources_permits(sqlite_url: str) -> None:
    """``ratchet_resource_permits_held{resource}`` counts the live permits of each
    configured resource (an ended claim's permit no longer counts), and
    ``ratchet_resource_limit{resource}`` is the limit the store holds, once written."""
    app = Ratchet(sqlite_url, **FAST)
    try:
        app.configure_resource("payments-api", max_concurrent=3)
        app.configure_resource("ledger", max_concurrent=1)
        store = app.store
        assert isinstance(store, SupportsResourcePermits)
        metrics = RatchetMetrics(app, cluster_cache_seconds=0.0)
        samples = parse(generate_latest(metrics.registry).decode())
        assert of(samples, "ratchet_resource_permits_held", "resource") == {
            "ledger": 0,
            "payments-api": 0,
        }
        assert of(samples, "ratchet_resource_limit", "resource") == {}  # none written yet
        store.configure_resource("payments-api", max_concurrent=3)
        job = app.enqueue(app.job(name="metered")(lambda: None))
        other = app.enqueue("metered")
        claimed = store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=0)
        assert {c.id for c in claimed} == {job, other}
        for c in claimed:
            assert store.acquire_permit("payments-api", c.id, c.claim_seq, node_id="n")
        done = next(c for c in claimed if c.id == other)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        samples = parse(generate_latest(metrics.registry).decode())
        assert of(samples, "ratchet_resource_permits_held", "resource") == {
            "ledger": 0,
            "payments-api": 1,
        }
        assert of(samples, "ratchet_resource_limit", "resource") == {"payments-api": 3}
        metrics.close()
    finally:
        app.close()

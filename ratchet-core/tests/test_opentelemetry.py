"""OpenTelemetry tracing (``ratchet.otel``): spans read back from the SDK's in-memory
exporter, in this process and, for a worker in another process, from a file it writes.

Nothing here sets the global tracer provider of the test process (it can be set once per
process): each test instruments with its own provider and uninstruments afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    SpanContext,
    SpanKind,
    StatusCode,
    Tracer,
    format_span_id,
    format_trace_id,
)
from otel_span_files import read_spans

from conftest import FAST
from ratchet import JobStatus, Ratchet, current_job
from ratchet.cli import main
from ratchet.errors import BusinessKeyConflictError, RatchetError
from ratchet.events import JobStarted
from ratchet.otel import PLUGIN_NAME, RatchetInstrumentor
from ratchet.plugins import PluginRegistry
from ratchet.stores.sqlite.store import SQLiteJobStore

WORKSPACE_BIN = Path(sys.executable).parent
TESTS = Path(__file__).parent


def nothing() -> None:
    pass


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Ratchet instrumented with a provider that keeps every finished span in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    RatchetInstrumentor().instrument(tracer_provider=provider)
    yield memory
    RatchetInstrumentor().uninstrument()
    provider.shutdown()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> Tracer:
    """A tracer of the test's own "request", exporting to the same memory."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("tests")


@pytest.fixture
def traced(exporter: InMemorySpanExporter) -> Iterator[Ratchet]:
    """An application created after instrumenting (so traced), on a private store."""
    application = Ratchet("memory://", **FAST)
    yield application
    application.close()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def only(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    spans = named(exporter, name)
    assert len(spans) == 1, [span.name for span in exporter.get_finished_spans()]
    return spans[0]


def ids(context: SpanContext) -> tuple[int, int]:
    return context.trace_id, context.span_id


def attempt_of(span: ReadableSpan) -> int:
    return int((span.attributes or {})["ratchet.job.attempt"])


def claim_seq_of(span: ReadableSpan) -> int:
    return int((span.attributes or {})["ratchet.job.claim_seq"])


def traceparent(span: ReadableSpan) -> str:
    context = span.get_span_context()
    trace_id, span_id = format_trace_id(context.trace_id), format_span_id(context.span_id)
    return f"00-{trace_id}-{span_id}-{context.trace_flags:02x}"


def test_the_first_attempt_is_a_child_of_the_enqueue_span(
    traced: Ratchet, exporter: InMemorySpanExporter, tracer: Tracer
) -> None:
    """The PRODUCER span is a child of the request that enqueued, the CONSUMER span of the
    PRODUCER span: look at RatchetInstrumentor's middlewares in ratchet/otel.py."""

    @traced.job(name="charge")
    def charge(amount: int) -> int:
        return amount

    with tracer.start_as_current_span("request") as request:
        job_id = charge.enqueue(42)
    traced.run_until_idle(timeout=30)

    send = only(exporter, "send charge")
    process = only(exporter, "process charge")
    assert send.kind is SpanKind.PRODUCER
    assert send.parent is not None
    assert send.parent.span_id == request.get_span_context().span_id
    assert dict(send.attributes or {}) == {
        "messaging.system": "ratchet",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": "charge",
        "messaging.message.id": job_id,
        "messaging.client.id": traced.node_id,
        "ratchet.job.priority": 2,
    }
    assert type((send.attributes or {})["ratchet.job.priority"]) is int  # not JobPriority
    assert process.kind is SpanKind.CONSUMER
    assert process.context.trace_id == request.get_span_context().trace_id
    assert process.parent is not None
    assert process.parent.span_id == send.context.span_id
    assert process.links == ()
    assert process.status.status_code is StatusCode.UNSET
    assert dict(process.attributes or {}) == {
        "messaging.system": "ratchet",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "charge",
        "messaging.message.id": job_id,
        "messaging.client.id": traced.node_id,
        "ratchet.job.attempt": 1,
        "ratchet.job.claim_seq": 1,
    }
    stored = traced.get_job(job_id)
    assert stored is not None and stored.status is JobStatus.SUCCEEDED
    assert stored.params["ratchet.traceparent"] == traceparent(send)


def test_the_body_runs_inside_the_consumer_span(
    traced: Ratchet, exporter: InMemorySpanExporter, tracer: Tracer
) -> None:
    """Spans a job opens are children of its CONSUMER span (the span is current in the
    job's thread), for sync and async jobs alike."""

    @traced.job(name="sync_step")
    def sync_step() -> None:
        with tracer.start_as_current_span("inside sync"):
            pass

    @traced.job(name="async_step")
    async def async_step() -> None:
        with tracer.start_as_current_span("inside async"):
            pass

    sync_step.enqueue()
    async_step.enqueue()
    traced.run_until_idle(timeout=30)
    for job in ("sync", "async"):
        inner = only(exporter, f"inside {job}")
        process = only(exporter, f"process {job}_step")
        assert inner.parent is not None and inner.parent.span_id == process.context.span_id
        send = only(exporter, f"send {job}_step")
        assert process.parent is not None and process.parent.span_id == send.context.span_id


def test_the_producers_baggage_is_current_in_the_body(
    traced: Ratchet, exporter: InMemorySpanExporter, tracer: Tracer
) -> None:
    """Baggage set where the job was enqueued travels with it (ratchet.baggage) and is
    current while the body runs, on the first delivery and on a retry alike."""
    seen: list[object] = []

    @traced.job(name="tenant_report", max_retries=1, backoff_ms=10)
    def tenant_report() -> None:
        seen.append(baggage.get_baggage("tenant"))
        if len(seen) == 1:
            raise ConnectionError("try again")

    token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with tracer.start_as_current_span("request"):
            job_id = tenant_report.enqueue()
    finally:
        otel_context.detach(token)
    assert baggage.get_baggage("tenant") is None
    traced.run_until_idle(timeout=30)

    assert seen == ["acme", "acme"]
    stored = traced.get_job(job_id)
    assert stored is not None and stored.params["ratchet.baggage"] == "tenant=acme"


def test_a_retry_starts_a_new_trace_that_links_to_the_enqueue_span(
    traced: Ratchet, exporter: InMemorySpanExporter, tracer: Tracer
) -> None:
    """Attempt 2 is not a child of the PRODUCER span (a new trace) but links to it; look at
    _parent_and_links in ratchet/otel.py."""
    calls: list[int] = []

    @traced.job(name="flaky", max_retries=2, backoff_ms=10)
    def flaky() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("the payment gateway hung up")

    with tracer.start_as_current_span("request"):
        flaky.enqueue()
    traced.run_until_idle(timeout=30)

    send = only(exporter, "send flaky")
    first, second = sorted(named(exporter, "process flaky"), key=attempt_of)
    assert first.parent is not None and first.parent.span_id == send.context.span_id
    assert first.status.status_code is StatusCode.ERROR
    assert (second.attributes or {})["ratchet.job.attempt"] == 2
    assert second.parent is None
    assert second.context.trace_id != send.context.trace_id
    assert [ids(link.context) for link in second.links] == [ids(send.context)]
    assert second.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("how", ["app.retry_job", "ratchet jobs retry"])
def test_a_manual_retry_links_instead_of_parenting(
    exporter: InMemorySpanExporter, tracer: Tracer, sqlite_url: str, how: str
) -> None:
    """retry_job (and the CLI's ``jobs retry``) resets attempts to 0, so the rerun is
    attempt 1 again: the claim_seq of a later claim is what tells it apart from the first
    delivery (look at _parent_and_links in ratchet/otel.py)."""
    fail = [True]
    app = Ratchet(sqlite_url, **FAST)
    try:

        @app.job(name="once", max_retries=0)
        def once() -> None:
            if fail[0]:
                raise RuntimeError("first run fails")

        with tracer.start_as_current_span("request"):
            job_id = once.enqueue()
        app.run_until_idle(timeout=30)
        fail[0] = False
        if how == "app.retry_job":
            assert app.retry_job(job_id)
        else:
            assert main(["jobs", "retry", job_id, "--store", sqlite_url]) == 0
        app.run_until_idle(timeout=30)
        stored = app.get_job(job_id)
        assert stored is not None and stored.status is JobStatus.SUCCEEDED
    finally:
        app.close()

    send = only(exporter, "send once")
    runs = sorted(named(exporter, "process once"), key=claim_seq_of)
    assert [attempt_of(s) for s in runs] == [1, 1]
    assert runs[0].parent is not None and runs[0].parent.span_id == send.context.span_id
    assert runs[1].parent is None
    assert runs[1].context.trace_id != send.context.trace_id
    assert [ids(link.context) for link in runs[1].links] == [ids(send.context)]


def test_a_crash_redelivery_links_instead_of_parenting(
    traced: Ratchet, exporter: InMemorySpanExporter, tracer: Tracer
) -> None:
    """A claim left by a node that died before running the job: recovery puts it back and
    the redelivered attempt (JobStarted.redelivered) links to the PRODUCER span."""
    started: list[JobStarted] = []
    traced.on(JobStarted, started.append)

    @traced.job(name="left")
    def left() -> None:
        pass

    with tracer.start_as_current_span("request"):
        job_id = left.enqueue()
    # A previous run of this node id claimed the job and died without releasing it.
    [claimed] = traced.store.claim_due_jobs(
        node_id=traced.node_id, limit=1, start_now=1, priority_boost_seconds=0
    )
    assert claimed.id == job_id
    traced.run_until_idle(timeout=30)

    [event] = started
    assert event.redelivered
    send = only(exporter, "send left")
    process = only(exporter, "process left")
    assert claim_seq_of(process) == event.claim_seq > 1
    assert process.parent is None
    assert process.context.trace_id != send.context.trace_id
    assert [ids(link.context) for link in process.links] == [ids(send.context)]


def test_a_failure_sets_error_status_and_records_the_exception_masked(
    traced: Ratchet, exporter: InMemorySpanExporter
) -> None:
    """The body's exception reaches the middleware's __exit__: ERROR status, error.type and
    an exception event, with secrets masked as in Ratchet's logs."""

    class GatewayError(Exception):
        pass

    @traced.job(name="doomed", max_retries=0)
    def doomed() -> None:
        raise GatewayError("login refused for postgresql://shop:hunter2@db/shop")

    doomed.enqueue()
    traced.run_until_idle(timeout=30)

    process = only(exporter, "process doomed")
    assert process.status.status_code is StatusCode.ERROR
    assert (
        process.status.description
        == "GatewayError: login refused for postgresql://shop:***@db/shop"
    )
    expected_type = f"{GatewayError.__module__}.{GatewayError.__qualname__}"
    assert (process.attributes or {})["error.type"] == expected_type
    (event,) = process.events
    attributes = dict(event.attributes or {})
    assert event.name == "exception"
    assert attributes["exception.type"] == expected_type
    assert attributes["exception.message"] == "login refused for postgresql://shop:***@db/shop"
    assert "hunter2" not in str(attributes["exception.stacktrace"])
    assert "GatewayError" in str(attributes["exception.stacktrace"])
    assert only(exporter, "send doomed").status.status_code is StatusCode.UNSET


def test_an_exception_whose_str_raises_still_marks_the_span(
    traced: Ratchet, exporter: InMemorySpanExporter
) -> None:
    """Span.record_exception would call the broken __str__ and fail before the status is
    set; ratchet.otel writes the event from Ratchet's own safe failure text."""

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text for you")

    @traced.job(name="odd", max_retries=0)
    def odd() -> None:
        raise Unprintable

    job_id = odd.enqueue()
    traced.run_until_idle(timeout=30)

    stored = traced.get_job(job_id)
    assert stored is not None and stored.status is JobStatus.FAILED
    process = only(exporter, "process odd")
    assert process.status.status_code is StatusCode.ERROR
    assert str(process.status.description).startswith("Unprintable: <unprintable ")
    (event,) = process.events
    assert str((event.attributes or {})["exception.type"]).endswith(".Unprintable")


def test_a_body_that_returns_after_its_timeout_is_an_error(
    traced: Ratchet, exporter: InMemorySpanExporter
) -> None:
    """Ratchet records that attempt as a timeout failure, so its span says ERROR too,
    though no exception reached the middleware."""

    @traced.job(name="slow", timeout=0.2, max_retries=0)
    def slow() -> str:
        context = current_job()
        deadline = time.monotonic() + 30
        while not context.cancel_requested and time.monotonic() < deadline:
            time.sleep(0.01)
        return "too late"

    job_id = slow.enqueue()
    traced.run_until_idle(timeout=30)

    stored = traced.get_job(job_id)
    assert stored is not None and stored.status is JobStatus.FAILED
    process = only(exporter, "process slow")
    assert process.status.status_code is StatusCode.ERROR
    assert (process.attributes or {})["error.type"] == "timeout"
    assert process.events == ()


def test_an_async_body_cancelled_at_its_timeout_records_the_timeout_error(
    traced: Ratchet, exporter: InMemorySpanExporter
) -> None:
    @traced.job(name="stuck", timeout=0.2, max_retries=0)
    async def stuck() -> None:
        await asyncio.sleep(30)

    stuck.enqueue()
    traced.run_until_idle(timeout=30)

    process = only(exporter, "process stuck")
    assert process.status.status_code is StatusCode.ERROR
    assert (process.attributes or {})["error.type"] == "TimeoutError"
    assert [event.name for event in process.events] == ["exception"]


def test_a_failed_store_write_marks_the_enqueue_span(
    traced: Ratchet, exporter: InMemorySpanExporter
) -> None:
    @traced.job(name="unique")
    def unique() -> None:
        pass

    traced.builder(unique).business_key("order-7").submit()
    with pytest.raises(BusinessKeyConflictError):
        traced.builder(unique).business_key("order-7").submit()

    ok, failed = named(exporter, "send unique")
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "ratchet.errors.BusinessKeyConflictError"


def test_a_batch_has_one_enqueue_span_that_parents_every_job(
    traced: Ratchet, exporter: InMemorySpanExporter
) -> None:
    @traced.job(name="email")
    def email(to: str) -> None:
        pass

    ids = traced.enqueue_many(email, [("a",), ("b",), ("c",)])
    traced.run_until_idle(timeout=30)

    send = only(exporter, "send email")
    attributes = dict(send.attributes or {})
    assert attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.id" not in attributes
    processes = named(exporter, "process email")
    assert sorted((s.attributes or {})["messaging.message.id"] for s in processes) == sorted(ids)
    assert all(s.parent is not None and s.parent.span_id == send.context.span_id for s in processes)
    for job_id in ids:
        stored = traced.get_job(job_id)
        assert stored is not None
        assert stored.params["ratchet.traceparent"] == traceparent(send)


@contextmanager
def sqlite3_transaction(path: Path) -> Iterator[tuple[Any, Callable[[], None], Callable[[], None]]]:
    conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
    try:
        yield conn, conn.commit, conn.rollback
    finally:
        conn.close()


@contextmanager
def sqlalchemy_connection(
    path: Path,
) -> Iterator[tuple[Any, Callable[[], None], Callable[[], None]]]:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            yield conn, conn.commit, conn.rollback
    finally:
        engine.dispose()


@contextmanager
def sqlalchemy_session(path: Path) -> Iterator[tuple[Any, Callable[[], None], Callable[[], None]]]:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    engine = sqlalchemy.create_engine(f"sqlite:///{path}")
    try:
        with Session(engine) as session:
            yield session, session.commit, session.rollback
    finally:
        engine.dispose()


TRANSACTIONS: dict[
    str,
    Callable[[Path], AbstractContextManager[tuple[Any, Callable[[], None], Callable[[], None]]]],
] = {
    "sqlite3": sqlite3_transaction,
    "sqlalchemy-connection": sqlalchemy_connection,
    "sqlalchemy-session": sqlalchemy_session,
}


@pytest.mark.parametrize("connection", sorted(TRANSACTIONS))
def test_a_transactional_enqueue_carries_the_trace_context(
    exporter: InMemorySpanExporter, tracer: Tracer, tmp_path: Path, connection: str
) -> None:
    """enqueue_in on the SQLite store: the traceparent is written in the caller's
    transaction with the job (gone with it on rollback), and the worker's span is a child
    of the enqueue span."""
    path = tmp_path / "shop.db"
    app = Ratchet(f"sqlite:///{path}", **FAST)
    try:

        @app.job(name="ship")
        def ship(order: int) -> None:
            pass

        transaction = TRANSACTIONS[connection](path)
        with (
            transaction as (conn, commit, rollback),
            tracer.start_as_current_span("checkout") as checkout,
        ):
            app.enqueue_in(conn, ship, 1)
            dropped = app.enqueue_in(conn, ship, 2)
            rollback()
            kept = app.enqueue_in(conn, ship, 3)
            commit()
        assert app.get_job(dropped) is None
        app.run_until_idle(timeout=30)

        sends = named(exporter, "send ship")
        assert len(sends) == 3  # the rolled-back enqueues were traced too
        assert all(
            s.parent is not None and s.parent.span_id == checkout.get_span_context().span_id
            for s in sends
        )
        stored = app.get_job(kept)
        assert stored is not None and stored.status is JobStatus.SUCCEEDED
        (send,) = [s for s in sends if (s.attributes or {})["messaging.message.id"] == kept]
        assert stored.params["ratchet.traceparent"] == traceparent(send)
        process = only(exporter, "process ship")
        assert process.parent is not None and process.parent.span_id == send.context.span_id
    finally:
        app.close()


def test_without_an_sdk_nothing_is_recorded_and_no_param_is_added() -> None:
    """The API's no-op provider (this process never sets a global one): no span context,
    so nothing to store."""
    RatchetInstrumentor().instrument()
    try:
        app = Ratchet("memory://", **FAST)

        @app.job(name="plain")
        def plain() -> None:
            pass

        job_id = plain.enqueue()
        app.run_until_idle(timeout=30)
        stored = app.get_job(job_id)
        assert stored is not None and stored.status is JobStatus.SUCCEEDED
        assert stored.params == {}
        app.close()
    finally:
        RatchetInstrumentor().uninstrument()


def test_which_applications_are_traced(caplog: pytest.LogCaptureFixture) -> None:
    """New applications with the default registry are; one created before instrument(),
    one with its own registry, or with the plugin disabled is not, until instrument_app."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    earlier = Ratchet("memory://", **FAST)
    RatchetInstrumentor().instrument(tracer_provider=provider)
    own_registry = Ratchet(
        SQLiteJobStore.from_memory_url("memory://"), plugins=PluginRegistry(), **FAST
    )
    disabled = Ratchet("memory://", disabled_plugins=(PLUGIN_NAME,), **FAST)
    later = Ratchet("memory://", **FAST)
    apps = {"earlier": earlier, "own_registry": own_registry, "disabled": disabled, "later": later}
    try:
        for name, app in apps.items():
            app.job(name=name)(nothing)
            app.enqueue(name)
        assert [s.name for s in memory.get_finished_spans()] == ["send later"]

        RatchetInstrumentor().instrument_app(earlier)
        RatchetInstrumentor().instrument_app(earlier)  # once only
        RatchetInstrumentor().instrument_app(own_registry)
        RatchetInstrumentor().instrument_app(later)  # already traced: unchanged
        for app in (earlier, own_registry, later):
            assert len(app.observers.execution_middleware) == 1
            assert len(app.observers.enqueue_middleware) == 1
        memory.clear()
        for name, app in apps.items():
            app.enqueue(name)
        assert sorted(s.name for s in memory.get_finished_spans()) == [
            "send earlier",
            "send later",
            "send own_registry",
        ]

        with caplog.at_level(logging.WARNING, logger="ratchet.otel"):
            RatchetInstrumentor().instrument()  # already: a warning, no second middleware
        assert "already instrumented" in caplog.text
        with Ratchet("memory://", **FAST) as another:
            assert len(another.observers.enqueue_middleware) == 1
    finally:
        RatchetInstrumentor().uninstrument()
        for app in apps.values():
            app.close()
        provider.shutdown()


def test_ratchet_disabled_plugins_switches_tracing_off(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RATCHET_DISABLED_PLUGINS=opentelemetry: applications created while it is set get no
    middleware, so no span and no stored trace context."""
    monkeypatch.setenv("RATCHET_DISABLED_PLUGINS", f"other, {PLUGIN_NAME}")
    off = Ratchet("memory://", **FAST)
    monkeypatch.delenv("RATCHET_DISABLED_PLUGINS")
    on = Ratchet("memory://", **FAST)
    try:
        assert (off.observers.enqueue_middleware, off.observers.execution_middleware) == ([], [])
        for name, app in (("off", off), ("on", on)):
            app.job(name=name)(nothing)
            job_id = app.enqueue(name)
            assert app.run_until_idle(timeout=30) == 1
            stored = app.get_job(job_id)
            assert stored is not None
            assert ("ratchet.traceparent" in stored.params) is (name == "on")
        assert sorted(s.name for s in exporter.get_finished_spans()) == ["process on", "send on"]
    finally:
        off.close()
        on.close()


def test_uninstrument_takes_the_middlewares_out(exporter: InMemorySpanExporter) -> None:
    before = Ratchet("memory://", **FAST)
    assert len(before.observers.execution_middleware) == 1
    assert RatchetInstrumentor().is_instrumented_by_opentelemetry

    RatchetInstrumentor().uninstrument()
    try:
        assert not RatchetInstrumentor().is_instrumented_by_opentelemetry
        after = Ratchet("memory://", **FAST)
        for app in (before, after):
            assert app.observers.execution_middleware == []
            assert app.observers.enqueue_middleware == []
            app.job(name="quiet")(nothing)
            job_id = app.enqueue("quiet")
            app.run_until_idle(timeout=30)
            stored = app.get_job(job_id)
            assert stored is not None and stored.params == {}
            app.close()
        assert exporter.get_finished_spans() == ()
        with pytest.raises(RatchetError, match=r"call RatchetInstrumentor\(\)\.instrument\(\)"):
            RatchetInstrumentor().instrument_app(before)
    finally:
        RatchetInstrumentor().instrument()  # for the fixture's uninstrument()


def test_the_instrumentor_is_an_opentelemetry_instrumentor_entry_point() -> None:
    from importlib.metadata import entry_points

    (found,) = [
        ep for ep in entry_points(group="opentelemetry_instrumentor") if ep.name == "ratchet"
    ]
    assert found.value == "ratchet.otel:RatchetInstrumentor"
    assert found.load() is RatchetInstrumentor


def test_ratchet_imports_and_runs_without_opentelemetry(tmp_path: Path) -> None:
    """ratchet-core does not depend on OpenTelemetry; ratchet.otel says how to install it."""
    script = tmp_path / "no_otel.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys

            class NoOpenTelemetry:
                def find_spec(self, name, path=None, target=None):
                    if name == "opentelemetry" or name.startswith("opentelemetry."):
                        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                    return None

            sys.meta_path.insert(0, NoOpenTelemetry())
            from ratchet import Ratchet

            app = Ratchet("memory://", coordinator="none")
            app.job(name="x")(lambda: None)
            app.enqueue("x")
            assert app.run_until_idle(timeout=30) == 1
            assert not any(m.startswith("opentelemetry") for m in sys.modules)
            try:
                import ratchet.otel
            except ImportError as exc:
                print(exc)
            """
        )
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'ratchet-core[otel]'" in result.stdout


JOBS_MODULE = """
def greet(who):
    return f"hello {who}"
"""

# How both subprocesses trace: spans to SPANS_FILE; instrumented here in code, or already
# by the opentelemetry-instrument command (through the entry point, before this runs),
# which then uses the global provider set here.
TRACING_SETUP = """
import os

from opentelemetry import trace
from otel_span_files import file_tracer_provider

provider = file_tracer_provider(os.environ["SPANS_FILE"])
if os.environ["INSTRUMENT"] == "code":
    from ratchet.otel import RatchetInstrumentor

    RatchetInstrumentor().instrument(tracer_provider=provider)
else:
    trace.set_tracer_provider(provider)
"""

# The producer: enqueues inside a "request" span, prints the job id.
PRODUCER_SCRIPT = (
    TRACING_SETUP
    + """
from ratchet import Ratchet
from traced_jobs import greet

with Ratchet(coordinator="none") as app:
    app.job(name="greet")(greet)
    with provider.get_tracer("shop").start_as_current_span("request"):
        print(app.enqueue("greet", "world"))
"""
)

# The worker's application module, for ``ratchet worker traced_worker:app``.
WORKER_MODULE = (
    TRACING_SETUP
    + """
from ratchet import Ratchet
from traced_jobs import greet

app = Ratchet(poll_burst_seconds=0.02, poll_idle_max_seconds=0.2, coordinator="none")
app.job(name="greet")(greet)
"""
)


def subprocess_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without RATCHET_* and OTEL_* settings, with the workspace's
    commands first on PATH and the test helpers importable."""
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("RATCHET_", "OTEL_"))
    }
    environment.update(
        PATH=f"{WORKSPACE_BIN}{os.pathsep}{environment.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(TESTS)]),
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        **extra,
    )
    return environment


@pytest.mark.slow
@pytest.mark.parametrize("instrument", ["code", "opentelemetry-instrument"])
def test_the_worker_in_another_process_continues_the_producers_trace(
    tmp_path: Path, instrument: str
) -> None:
    """A producer process enqueues into a SQLite file with a span active; a ``ratchet
    worker`` process runs the job. Both are instrumented in code, or by the
    ``opentelemetry-instrument`` command through the entry point, and each writes its spans
    to its own file: the worker's CONSUMER span has the producer's trace id and the
    PRODUCER span as its (remote) parent."""
    (tmp_path / "traced_jobs.py").write_text(JOBS_MODULE)
    (tmp_path / "traced_worker.py").write_text(WORKER_MODULE)
    (tmp_path / "producer.py").write_text(PRODUCER_SCRIPT)
    store_url = f"sqlite:///{tmp_path / 'shared.db'}"
    prefix = [str(WORKSPACE_BIN / "opentelemetry-instrument")] if instrument != "code" else []
    producer_spans, worker_spans = tmp_path / "producer.jsonl", tmp_path / "worker.jsonl"

    produced = subprocess.run(
        [*prefix, sys.executable, "producer.py"],
        cwd=tmp_path,
        env=subprocess_environment(
            tmp_path,
            RATCHET_STORE_URL=store_url,
            SPANS_FILE=str(producer_spans),
            INSTRUMENT=instrument,
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    job_id = produced.stdout.split()[-1]
    by_name = {span["name"]: span for span in read_spans(producer_spans)}
    assert sorted(by_name) == ["request", "send greet"], produced.stderr
    request, send = by_name["request"], by_name["send greet"]
    assert send["kind"] == "PRODUCER" and send["parent_span_id"] == request["span_id"]
    assert send["attributes"]["messaging.message.id"] == job_id

    worker = subprocess.Popen(
        [*prefix, str(WORKSPACE_BIN / "ratchet"), "worker", "traced_worker:app"],
        cwd=tmp_path,
        env=subprocess_environment(
            tmp_path,
            RATCHET_STORE_URL=store_url,
            SPANS_FILE=str(worker_spans),
            INSTRUMENT=instrument,
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline and worker.poll() is None:
            spans = read_spans(worker_spans)
            if any(span["name"] == "process greet" for span in spans):
                break
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=60)
    processes = [span for span in spans if span["name"] == "process greet"]
    assert len(processes) == 1, output
    (process,) = processes
    assert process["kind"] == "CONSUMER"
    assert process["trace_id"] == send["trace_id"] == request["trace_id"]
    assert process["parent_span_id"] == send["span_id"]
    assert process["parent_is_remote"] is True
    assert process["links"] == []
    assert process["status"] == "UNSET"
    assert process["attributes"]["messaging.message.id"] == job_id
    assert process["attributes"]["ratchet.job.attempt"] == 1
    finished = Ratchet(store_url, **FAST)
    try:
        stored = finished.get_job(job_id)
        assert stored is not None and stored.status is JobStatus.SUCCEEDED, output
    finally:
        finished.close()

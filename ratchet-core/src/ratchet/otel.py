"""OpenTelemetry tracing: a PRODUCER span for every enqueue, a CONSUMER span for every attempt.

Install the extra (``pip install 'ratchet-core[otel]'``: the OpenTelemetry API only; the
application brings the SDK and its exporters) and switch it on in one of two ways:

* ``opentelemetry-instrument ratchet worker myapp:app``: the ``opentelemetry-instrument``
  command (package ``opentelemetry-instrumentation``) finds :class:`RatchetInstrumentor`
  through the ``opentelemetry_instrumentor`` entry point that ratchet-core declares, and
  instruments before the application module is imported. No code changes.
* In code, before the application is created:
  ``RatchetInstrumentor().instrument(tracer_provider=provider)``.

**Which applications are traced.** Instrumenting registers a process plugin named
``opentelemetry`` (:func:`ratchet.plugins.register_process_plugin`) whose
``ratchet_application`` hook adds the two middlewares to every ``Ratchet`` created from
then on with the default plugin registry. An application that already exists, or one
given its own ``plugins=PluginRegistry(...)``, is not changed: pass it to
:meth:`RatchetInstrumentor.instrument_app`. ``RATCHET_DISABLED_PLUGINS=opentelemetry``
switches the plugin off for new applications without touching code
(``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=ratchet`` keeps ``opentelemetry-instrument`` from
instrumenting at all). ``uninstrument()`` takes the middlewares out of every
application it added them to (jobs already running finish their spans).

**Enqueue.** Each enqueue (``enqueue``, ``enqueue_many``, the transactional ``enqueue_in``
family, ``submit`` and ``submit_in`` of a builder) opens a PRODUCER span ``send <job name>``
around the store write, current while the store runs, with the messaging semantic
conventions: ``messaging.system = "ratchet"``, ``messaging.operation.type = "send"``,
``messaging.destination.name`` = the job name, ``messaging.message.id`` = the job id (a
single job) or ``messaging.batch.message_count`` (``enqueue_many``: one span for the batch,
its context shared by every job), ``messaging.client.id`` = the node id. The configured
propagator (``opentelemetry.propagate``, W3C trace context and baggage by default) writes
that span's context into the job's params under reserved keys, each field prefixed with
``ratchet.``: ``ratchet.traceparent``, ``ratchet.tracestate`` (and ``ratchet.baggage`` when
baggage is set). They are stored with the job in the same write, so a transactional
enqueue carries them too and a rollback removes them with the job. A failed write sets the
span's status to ERROR with the exception recorded. Without an SDK (the API's no-op
provider) nothing is recorded and no param is added.

**Execution.** Each run of a job's body opens a CONSUMER span ``process <job name>`` in
the job's thread (or task), current for the body together with the baggage stored at
enqueue, if any, with ``messaging.operation.type = "process"``, the same destination,
message id and client id, and ``ratchet.job.attempt`` and ``ratchet.job.claim_seq``. The
first delivery (attempt 1 of the first claim) is a child of the producer span, so the
job's work joins the trace of the request that enqueued it. Every later delivery (a retry,
a crash redelivery, a manual ``retry_job``, a claim released and taken again) starts a new
trace that links to the producer span: the trace of the request does not grow with every
retry, and each attempt still points back to it. ``JobContext`` tells a later delivery by
``attempt > 1`` or ``claim_seq > 1``; it cannot tell a claim that was released before its
body ran (prefetched, then a shutdown) from one that ran, so such a job's first run is
linked rather than parented. A body that raises sets the span's status to ERROR,
``error.type`` to the exception's qualified name, and records the exception (message and
stacktrace masked as Ratchet's logs are); a synchronous body that returns after its
timeout passed is marked ERROR with ``error.type = "timeout"``, since Ratchet records that
attempt as failed (an ``async`` body is cancelled at its timeout: its span records the
``TimeoutError`` Ratchet raises). A success leaves the status unset, as the OpenTelemetry
conventions ask of instrumentations.

**Cost.** Per job, a recording span is tens of microseconds of CPU in the SDK (attributes,
sampling, the span processor); these middlewares add a few more, and a few with no SDK at
all. Trivial jobs drained from SQLite feel it (``benchmarks/bench_observed.py`` measures
it); jobs that do real work do not. A sampler (``ParentBased(TraceIdRatioBased(...))``)
is the way to pay less: an unsampled span records nothing, and its ``traceparent`` still
travels with the job, so the job's span follows the same decision.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import traceback
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
    from opentelemetry.context import Context
    from opentelemetry.propagators.textmap import TextMapPropagator
    from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        f"ratchet.otel needs the OpenTelemetry API, which cannot be imported ({exc}). "
        "Install it with: pip install 'ratchet-core[otel]'."
    ) from exc

from ratchet import JobContext, Ratchet, __version__
from ratchet._engine.failure_text import MAX_ERROR_CHARS, summarize_failure
from ratchet._logs import get_logger
from ratchet._observers import MiddlewareHandle
from ratchet._redact import redact
from ratchet.errors import RatchetError
from ratchet.plugins import hookimpl, register_process_plugin, unregister_process_plugin
from ratchet.spi import NewJob

__all__ = ["PARAM_PREFIX", "PLUGIN_NAME", "TRACER_NAME", "RatchetInstrumentor"]

log = get_logger("ratchet.otel")

# The instrumentation scope of every span, and the name of the process plugin (the name
# RATCHET_DISABLED_PLUGINS takes).
TRACER_NAME = "ratchet"
PLUGIN_NAME = "opentelemetry"
# Each field the propagator writes is stored in the job's params under this prefix.
PARAM_PREFIX = "ratchet."

MESSAGING_SYSTEM = "ratchet"
# An exception's message in a span, at most this long (its stacktrace: MAX_ERROR_CHARS).
EXCEPTION_MESSAGE_CHARS = 2_000


class RatchetInstrumentor:
    """Traces every enqueue and every attempt of the applications created after
    :meth:`instrument` (see :mod:`ratchet.otel`).

    The interface of OpenTelemetry's ``BaseInstrumentor`` without depending on the
    ``opentelemetry-instrumentation`` package (the extra is the API only): the
    ``opentelemetry-instrument`` command only calls ``RatchetInstrumentor().instrument()``.
    Every instance shares one state, as ``BaseInstrumentor``'s singletons do: the instance
    the command made and the one your code makes are the same switch.
    """

    _tracing: ClassVar[_Tracing | None] = None
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def instrumentation_dependencies(self) -> Collection[str]:
        """Nothing to check: the instrumentor ships with the library it instruments."""
        return ()

    @property
    def is_instrumented_by_opentelemetry(self) -> bool:
        return RatchetInstrumentor._tracing is not None

    def instrument(self, *, tracer_provider: trace.TracerProvider | None = None, **_: Any) -> None:
        """Trace every application created from now on, with spans from
        ``tracer_provider`` (default: the global provider, also one set later). Other
        keywords (``opentelemetry-instrument`` passes ``skip_dep_check``) are accepted and
        ignored. Instrumenting twice logs a warning and changes nothing: call
        :meth:`uninstrument` first to change the provider."""
        with RatchetInstrumentor._lock:
            if RatchetInstrumentor._tracing is not None:
                log.warning(
                    "Ratchet is already instrumented for OpenTelemetry; instrument() "
                    "changed nothing. Call RatchetInstrumentor().uninstrument() first to "
                    "use another tracer provider."
                )
                return
            tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider)
            tracing = _Tracing(tracer, global_provider=tracer_provider is None)
            register_process_plugin(tracing, PLUGIN_NAME)
            RatchetInstrumentor._tracing = tracing

    def uninstrument(self, **_: Any) -> None:
        """Stop tracing: new applications get no middleware, and the middlewares are taken
        out of every application they were added to (a job already running finishes its
        span). Without a previous :meth:`instrument`, logs a warning."""
        with RatchetInstrumentor._lock:
            tracing = RatchetInstrumentor._tracing
            if tracing is None:
                log.warning("Ratchet is not instrumented for OpenTelemetry; nothing to undo.")
                return
            unregister_process_plugin(PLUGIN_NAME)
            tracing.detach_all()
            RatchetInstrumentor._tracing = None

    def instrument_app(self, app: Ratchet) -> None:
        """Trace ``app``, an application created before :meth:`instrument` or with its
        own ``plugins=`` registry. An application already traced is left as it is."""
        tracing = RatchetInstrumentor._tracing
        if tracing is None:
            raise RatchetError(
                f"RatchetInstrumentor().instrument_app({app!r}) was called before "
                "instrument(); call RatchetInstrumentor().instrument() first."
            )
        tracing.attach(app)


class _Tracing:
    """The process plugin: adds the two middlewares to each new application, and keeps
    their handles to take them out again."""

    def __init__(self, tracer: Tracer, *, global_provider: bool = False) -> None:
        self.tracer = tracer
        # With the global provider, spans are only worth making once an SDK is set:
        # until then every job would pay for a non-recording span (see _no_sdk_yet).
        self.global_provider = global_provider
        self._lock = threading.Lock()
        self._handles: weakref.WeakKeyDictionary[Ratchet, tuple[MiddlewareHandle, ...]] = (
            weakref.WeakKeyDictionary()
        )

    @hookimpl
    def ratchet_application(self, app: Ratchet) -> None:
        self.attach(app)

    def attach(self, app: Ratchet) -> None:
        with self._lock:
            if app in self._handles:
                return
            self._handles[app] = (
                app.add_enqueue_middleware(
                    functools.partial(self.enqueue_span, node_id=app.node_id)
                ),
                app.add_middleware(functools.partial(self.execution_span, node_id=app.node_id)),
            )

    def detach_all(self) -> None:
        with self._lock:
            for handles in list(self._handles.values()):
                for handle in handles:
                    handle.remove()
            self._handles.clear()

    def enqueue_span(
        self, jobs: Sequence[NewJob], node_id: str
    ) -> _ProducerSpan | contextlib.nullcontext[None]:
        """The PRODUCER span around one enqueue's store write; entering it yields the
        propagation fields to store in every job's params."""
        if self.global_provider and _no_sdk_yet():
            return contextlib.nullcontext()
        return _ProducerSpan(self.tracer, jobs, node_id)

    def execution_span(
        self, context: JobContext, node_id: str
    ) -> _ConsumerSpan | contextlib.nullcontext[None]:
        """The CONSUMER span around one run of a job's body."""
        if self.global_provider and _no_sdk_yet():
            return contextlib.nullcontext()
        return _ConsumerSpan(self.tracer, context, node_id)


def _no_sdk_yet() -> bool:
    """Whether the global tracer provider is still the API's placeholder (no SDK set):
    then no span would be recorded, so none is made (a no-op span still costs a few
    microseconds a job). Checked per call, as an SDK may be set after instrument()."""
    return isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


# The two middlewares are small classes rather than @contextmanager generators over
# start_as_current_span: they run once per job, and each generator layer costs.


class _ProducerSpan:
    __slots__ = ("_attributes", "_name", "_span", "_token", "_tracer")

    def __init__(self, tracer: Tracer, jobs: Sequence[NewJob], node_id: str) -> None:
        self._tracer = tracer
        names = {job.name for job in jobs}
        attributes: dict[str, str | int] = {
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.client.id": node_id,
        }
        self._name = "send"
        if len(names) == 1:
            name = next(iter(names))
            attributes["messaging.destination.name"] = name
            self._name = f"send {name}"
        if len(jobs) == 1:
            attributes["messaging.message.id"] = jobs[0].id
            attributes["ratchet.job.priority"] = int(jobs[0].priority)  # not the IntEnum
        else:
            attributes["messaging.batch.message_count"] = len(jobs)
        self._attributes = attributes

    def __enter__(self) -> dict[str, str]:
        self._span = self._tracer.start_span(
            self._name, kind=SpanKind.PRODUCER, attributes=self._attributes
        )
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return {PARAM_PREFIX + field: value for field, value in carrier.items()}

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        try:
            if exc is not None:
                _record_failure(self._span, exc)
        finally:
            otel_context.detach(self._token)
            self._span.end()


class _ConsumerSpan:
    __slots__ = ("_context", "_node_id", "_span", "_token", "_tracer")

    def __init__(self, tracer: Tracer, context: JobContext, node_id: str) -> None:
        self._tracer = tracer
        self._context = context
        self._node_id = node_id

    def __enter__(self) -> None:
        context = self._context
        parent, links = _parent_and_links(context)
        self._span = self._tracer.start_span(
            f"process {context.name}",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": MESSAGING_SYSTEM,
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": context.name,
                "messaging.message.id": context.id,
                "messaging.client.id": self._node_id,
                "ratchet.job.attempt": context.attempt,
                "ratchet.job.claim_seq": context.claim_seq,
            },
            links=links,
        )
        # Current for the body in the producer's context, so its baggage is current too.
        self._token = otel_context.attach(trace.set_span_in_context(self._span, parent))

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        try:
            if exc is not None:
                _record_failure(self._span, exc)
            elif self._context.cancel_requested:  # returned after its timeout: failed
                self._span.set_attribute("error.type", "timeout")
                self._span.set_status(
                    Status(StatusCode.ERROR, "the attempt ran past its timeout; it failed")
                )
        finally:
            otel_context.detach(self._token)
            self._span.end()


def _parent_and_links(context: JobContext) -> tuple[Context | None, list[Link]]:
    """The parent context of an attempt's span and its links: the producer's span as
    parent on the first delivery; on any later one, a new trace (the producer's baggage
    kept) that links to it. A job stored without a trace context gets the ambient one."""
    stored = _stored_context(context.params)
    if stored is None:
        return None, []
    producer, producer_span = stored
    if not producer_span.is_valid:
        return None, []
    if context.attempt == 1 and context.claim_seq == 1:
        return producer, []
    return trace.set_span_in_context(trace.INVALID_SPAN, producer), [Link(producer_span)]


def _stored_context(params: Mapping[str, Any]) -> tuple[Context, SpanContext] | None:
    """The context the propagator reads back from a job's params and the producer span's
    context in it, or ``None`` when the job carries none (enqueued without tracing)."""
    textmap = propagate.get_global_textmap()
    carrier = tuple(
        (field, value)
        for field in sorted(textmap.fields)
        if isinstance(value := params.get(PARAM_PREFIX + field), str)
    )
    if not carrier:
        return None
    try:
        return _extract(textmap, carrier)
    except TypeError:  # a propagator that cannot be a cache key (unhashable)
        return _extract.__wrapped__(textmap, carrier)


@functools.lru_cache(maxsize=1024)
def _extract(
    textmap: TextMapPropagator, carrier: tuple[tuple[str, str], ...]
) -> tuple[Context, SpanContext]:
    """Extraction, cached: the jobs of one ``enqueue_many`` (and every retry of a job)
    carry the same fields, and parsing them is a good part of a span's cost. Extracted
    into an empty context, never the worker thread's current one, so a cached result
    does not depend on where it was first read (contexts are immutable)."""
    producer = textmap.extract(dict(carrier), context=Context())
    return producer, trace.get_current_span(producer).get_span_context()


def _record_failure(span: Span, exc: BaseException) -> None:
    """ERROR status, ``error.type`` and the ``exception`` event, its text masked as Ratchet's
    logs are. Never raises, whatever the exception: ``Span.record_exception`` would call the
    exception's own ``__str__`` unmasked (and fail with it when it raises), so the event is
    written here from the same safe, bounded text a job's ``last_error`` is made of."""
    qualified = _qualified_name(exc)
    summary = summarize_failure(exc, limit=EXCEPTION_MESSAGE_CHARS)
    try:
        stacktrace = "".join(traceback.format_exception(exc))
    except BaseException:  # a broken __str__ or __notes__: the type is all there is
        stacktrace = f"{qualified}: <traceback unavailable>"
    message = redact(summary.partition(": ")[2])
    span.set_attribute("error.type", qualified)
    span.add_event(
        "exception",
        attributes={
            "exception.type": qualified,
            "exception.message": message,
            "exception.stacktrace": redact(stacktrace[:MAX_ERROR_CHARS]),
        },
    )
    span.set_status(Status(StatusCode.ERROR, f"{qualified.rpartition('.')[2]}: {message}"))


def _qualified_name(exc: BaseException) -> str:
    """``module.QualName`` (just ``QualName`` for builtins), as OpenTelemetry writes it."""
    kind = type(exc)
    module = getattr(kind, "__module__", "")
    name = getattr(kind, "__qualname__", kind.__name__)
    return name if not module or module == "builtins" else f"{module}.{name}"

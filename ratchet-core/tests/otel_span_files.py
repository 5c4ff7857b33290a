"""Finished spans to a JSON-lines file and back: how a test reads another process's spans.

The SDK's ``InMemorySpanExporter`` keeps spans in the process that made them; a worker or
a producer started as a subprocess exports with :class:`JsonLinesSpanExporter` instead
(one JSON object per finished span, appended and flushed as each span ends, so a test can
poll the file while the process runs), and the test reads them with :func:`read_spans`.
Imported by the subprocesses of ``test_opentelemetry.py`` through ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

__all__ = ["JsonLinesSpanExporter", "file_tracer_provider", "read_spans", "span_record"]


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """What a test checks of one span, in JSON types (ids as integers, as the SDK has them)."""
    context = span.get_span_context()
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": context.trace_id,
        "span_id": context.span_id,
        "parent_span_id": span.parent.span_id if span.parent is not None else None,
        "parent_is_remote": span.parent.is_remote if span.parent is not None else None,
        "links": [[link.context.trace_id, link.context.span_id] for link in span.links],
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
    }


class JsonLinesSpanExporter(SpanExporter):
    """Appends one line per finished span to ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(span)) + "\n" for span in spans)
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def file_tracer_provider(path: str | Path) -> TracerProvider:
    """An SDK provider exporting every span to ``path`` as soon as it ends."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    return provider


def read_spans(path: str | Path) -> list[dict[str, Any]]:
    """The spans written to ``path`` so far (none when it does not exist yet); a line still
    being written (no newline yet) is left for the next read."""
    file = Path(path)
    if not file.exists():
        return []
    text = file.read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]

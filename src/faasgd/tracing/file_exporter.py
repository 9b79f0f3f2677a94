"""`faasgd-file`: an OpenTelemetry span exporter appending JSON lines to a directory (extra `traces`).

One file per process (`<service>-<pid>.jsonl`), one line per ended span, written and flushed as the span
ends: no collector needed, and the local runtime's replicas (or any processes sharing a volume) leave
their spans side by side for `faasgd status JOB --trace --dir DIR` (tree.py). A line:
    {"trace_id", "span_id", "parent_id" (null for a root), "name", "kind", "service",
     "start_ns", "end_ns", "status", "attributes": {...}}
Ids are lower-case hex as in `traceparent`.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


def span_line(span: ReadableSpan) -> dict:
    """One ended span as the JSON object the file holds."""
    context, parent = span.get_span_context(), span.parent
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}",
            "parent_id": f"{parent.span_id:016x}" if parent is not None else None,
            "name": span.name, "kind": span.kind.name, "service": span.resource.attributes.get("service.name"),
            "start_ns": span.start_time, "end_ns": span.end_time, "status": span.status.status_code.name,
            "attributes": dict(span.attributes or {})}


class FileSpanExporter(SpanExporter):
    """Appends each exported span to <directory>/<service>-<pid>.jsonl."""

    def __init__(self, directory: str):
        self.directory = directory
        self._lock = threading.Lock()
        self._file = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_line(s), default=str) + "\n" for s in spans)
        try:
            with self._lock:
                if self._file is None:
                    os.makedirs(self.directory, exist_ok=True)
                    service = (spans[0].resource.attributes.get("service.name") if spans else None) or "faasgd"
                    name = f"{str(service).replace(os.sep, '_')}-{os.getpid()}.jsonl"
                    self._file = open(os.path.join(self.directory, name), "a", encoding="utf-8")
                self._file.write(lines)
                self._file.flush()
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

"""OpenTelemetry spans for every invocation, on the OpenTelemetry API alone (docs/how-to/traces.md).

The core names its spans here and nowhere sets up an SDK: until a process calls `setup.configure` (the
template's index.py does, once per replica, when the standard OTEL_* variables ask for an exporter), the
API's tracer is a no-op and every call below costs a few microseconds. The tree of one job:

    setup (emnist-setup's POST)                              faasgd.job_id, faasgd.workers
      call emnist-train  (one per fan-out, CLIENT)           `traceparent` injected into the call's headers
        train (emnist-train, continued from traceparent)      faasgd.job_id, faasgd.worker_id, faasgd.iteration
          store.fetch / store.push_update / store.put_record ...  (one per round trip, never per chunk)
          call emnist-train  (the next iteration, a hand-off, a lost peer re-invoked)
            train ...
    stacking.driver -> call stacking-trainer -> stacking.trainer -> store.* ; reducer, metatrainer likewise

A call through the gateway carries the context in `traceparent`/`tracestate` (W3C Trace Context); the
gateway and its queue keep them (faasgd.local.gateway: sync proxying and the NATS message's headers).
The receiving replica's index.py attaches the extracted context (`incoming`) around the handler, so
the function's own span (`span("train", ...)`) is the child of the caller's call span. Threads do not
inherit a context: `carry` hands the current one to a pool's calls, and a traced store keeps the
context it was made in for its worker's communication thread.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator, Mapping, MutableMapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind

TRACER_NAME = "faasgd"
ATTRIBUTE_PREFIX = "faasgd."  # every attribute the core sets: faasgd.job_id, faasgd.worker_id, ...
TRACE_HEADERS = ("traceparent", "tracestate")  # W3C Trace Context, what the gateway and the queue carry
# The store's round trips that become spans (ParameterStore methods); anything else passes through untraced.
STORE_CALLS = ("fetch", "get_weights", "push_update", "set_weights", "get_record", "get_records", "put_record",
               "add_record", "update_worker", "worker_record", "append_event", "events", "put_blob", "get_blob")


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` as span attributes: prefixed, None dropped, anything not a bool/int/float/str as text."""
    return {ATTRIBUTE_PREFIX + k: v if isinstance(v, (bool, int, float, str)) else str(v)
            for k, v in values.items() if v is not None}


@contextlib.contextmanager
def span(name: str, kind: SpanKind = SpanKind.INTERNAL, **values: Any) -> Iterator[trace.Span]:
    """A span named `name`, current inside the block; an exception ends it with an error status."""
    with tracer().start_as_current_span(name, kind=kind, attributes=attributes(values)) as current:
        yield current


def annotate(**values: Any) -> None:
    """Set attributes on the current span (what is known only once it has begun: a job's id)."""
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes(attributes(values))


def recording() -> bool:
    """True when the current span is recorded (an SDK is set up and this trace is sampled)."""
    return trace.get_current_span().is_recording()


def inject(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Put the current context into outgoing HTTP headers (traceparent, tracestate); the same mapping."""
    propagate.inject(headers)
    return headers


@contextlib.contextmanager
def incoming(headers: Mapping[str, str] | None) -> Iterator[None]:
    """The context a call's headers carry (its caller's span), current inside the block."""
    carried = {k.lower(): v for k, v in (headers or {}).items() if k.lower() in TRACE_HEADERS}
    token = otel_context.attach(propagate.extract(carried)) if carried else None
    try:
        yield
    finally:
        if token is not None:
            otel_context.detach(token)


def carry(call: Callable[..., Any]) -> Callable[..., Any]:
    """`call` run in the context current now, from whatever thread (a pool's threads start with none)."""
    captured = otel_context.get_current()

    @functools.wraps(call)
    def in_context(*args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(captured)
        try:
            return call(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return in_context


def call_span(function: str, asynchronous: bool) -> contextlib.AbstractContextManager:
    """The CLIENT span around one call of a function through the gateway."""
    return span(f"call {function}", SpanKind.CLIENT, function=function, asynchronous=asynchronous)


def traced_store(store: Any) -> Any:
    """`store` with a span per round trip (STORE_CALLS), children of the span current now, from any
    thread; the store itself when nothing is recorded (no SDK: no wrapper, no cost)."""
    return TracedStore(store, otel_context.get_current()) if recording() else store


class TracedStore:
    """A ParameterStore's stand-in: its round trips as spans `store.<method>` under the context it was made in
    (or the calling thread's own span, when that thread has one); every other attribute is the store's."""

    def __init__(self, store: Any, parent: otel_context.Context):
        self._store, self._parent = store, parent

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if name not in STORE_CALLS or not callable(value):
            return value
        parent = None if recording() else self._parent  # the communication thread has no span of its own

        @functools.wraps(value)
        def traced(*args: Any, **kwargs: Any) -> Any:
            with tracer().start_as_current_span(f"store.{name}", context=parent, kind=SpanKind.CLIENT,
                                                attributes={ATTRIBUTE_PREFIX + "store": self._store.url}):
                return value(*args, **kwargs)

        return traced

    def __repr__(self) -> str:
        return f"TracedStore({self._store!r})"


def traced(name: str | Callable[..., str]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function to run inside a span `name` (or `name(*args)`, named after its arguments)."""
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def in_span(*args: Any, **kwargs: Any) -> Any:
            with span(name(*args, **kwargs) if callable(name) else name, SpanKind.SERVER):
                return function(*args, **kwargs)

        return in_span

    return decorate

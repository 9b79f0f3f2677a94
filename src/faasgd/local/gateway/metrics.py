"""The gateway's Prometheus metrics, on prometheus-client with one CollectorRegistry per gateway.

The four families and their help texts are those of openfaas/faas `gateway/metrics/metrics.go`;
the histogram uses client_golang's default buckets, as the real `gateway_functions_seconds` does.
Rendered in text format 0.0.4 as promhttp answers it, with two adjustments to prometheus-client's
output: no `*_created` series (OpenMetrics extras that client_golang does not write in this format),
and `gateway_function_invocation_started` keeps its name (prometheus-client appends `_total` to
every counter). Numbers are written as prometheus-client writes them (`3.0`, `le="1.0"`).
One difference from CE: labels carry the bare function name ("emnist-train"), where the real
gateway appends the namespace ("emnist-train.openfaas-fn"); the local runtime has one namespace.
"""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # what promhttp answers, and generate_latest writes
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # prometheus.DefBuckets

INVOCATIONS = "gateway_function_invocation_total"
SECONDS = "gateway_functions_seconds"
SERVICE_COUNT = "gateway_service_count"
STARTED = "gateway_function_invocation_started"
_STARTED_AS_RENDERED = re.compile(rb"^(# (?:HELP|TYPE) )?" + STARTED.encode() + rb"_total\b", re.MULTILINE)


class Metrics:
    """Counters of function invocations, fed by the proxy; `render()` answers /metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ["function_name", "code"]
        self._invocations = Counter(INVOCATIONS, "Function metrics", labels, registry=self.registry)
        self._seconds = Histogram(SECONDS, "Function time taken", labels, buckets=BUCKETS, registry=self.registry)
        self._replicas = Gauge(SERVICE_COUNT, "Current count of replicas for function", ["function_name"],
                               registry=self.registry)
        self._started = Counter(STARTED, "The total number of function HTTP requests started.", ["function_name"],
                                registry=self.registry)

    def started(self, function: str) -> None:
        """Count an invocation as it is forwarded (gateway_function_invocation_started)."""
        self._started.labels(function).inc()

    def completed(self, function: str, code: int, seconds: float) -> None:
        """Count a finished invocation and observe its duration, labelled by HTTP status."""
        self._invocations.labels(function, str(code)).inc()
        self._seconds.labels(function, str(code)).observe(seconds)

    def invocation_count(self, function: str) -> int:
        """Finished invocations of `function`, summed over status codes (the UI's invocationCount)."""
        samples = (s for metric in self._invocations.collect() for s in metric.samples)
        return int(sum(s.value for s in samples
                       if s.name == INVOCATIONS and s.labels["function_name"] == function))

    def render(self, available_replicas: dict[str, int]) -> bytes:
        """The exposition text; `available_replicas` maps each function to its available replicas."""
        self._replicas.clear()
        for function, count in available_replicas.items():
            self._replicas.labels(function).set(count)
        text = generate_latest(_WithoutCreated(self.registry))
        return _STARTED_AS_RENDERED.sub(rb"\1" + STARTED.encode(), text)


class _WithoutCreated:
    """A view of a registry without the `*_created` samples."""

    def __init__(self, registry: CollectorRegistry):
        self.registry = registry

    def collect(self):
        for metric in self.registry.collect():
            kept = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            kept.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield kept

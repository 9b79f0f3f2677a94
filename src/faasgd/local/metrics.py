"""The gateway's Prometheus metrics, kept in memory and rendered in text exposition format 0.0.4.

The four families and their help texts are those of openfaas/faas `gateway/metrics/metrics.go`;
the histogram uses client_golang's default buckets, as the real `gateway_functions_seconds` does.
One difference: labels carry the bare function name ("emnist-train"), where the real gateway
appends the namespace ("emnist-train.openfaas-fn"); the local runtime has one namespace only.
"""

from __future__ import annotations

import math
import threading
from collections import Counter

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # what promhttp answers
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # prometheus.DefBuckets

INVOCATIONS = "gateway_function_invocation_total"
SECONDS = "gateway_functions_seconds"
SERVICE_COUNT = "gateway_service_count"
STARTED = "gateway_function_invocation_started"


class _Histogram:
    """Cumulative bucket counts, sum and count of one label set."""

    def __init__(self) -> None:
        self.buckets = [0] * len(BUCKETS)
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1
        self.total += seconds
        self.count += 1


class Metrics:
    """Thread-safe counters of function invocations, fed by the gateway's forwarding code."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: Counter[str] = Counter()
        self._completed: Counter[tuple[str, str]] = Counter()
        self._seconds: dict[tuple[str, str], _Histogram] = {}

    def started(self, function: str) -> None:
        """Count an invocation as it is forwarded (gateway_function_invocation_started)."""
        with self._lock:
            self._started[function] += 1

    def completed(self, function: str, code: int, seconds: float) -> None:
        """Count a finished invocation and observe its duration, labelled by HTTP status."""
        key = (function, str(code))
        with self._lock:
            self._completed[key] += 1
            self._seconds.setdefault(key, _Histogram()).observe(seconds)

    def invocation_count(self, function: str) -> int:
        """Finished invocations of `function`, summed over status codes (the UI's invocationCount)."""
        with self._lock:
            return sum(n for (name, _), n in self._completed.items() if name == function)

    def render(self, service_counts: dict[str, int]) -> str:
        """The exposition text; `service_counts` maps each function to its available replicas."""
        with self._lock:
            completed = sorted(self._completed.items())
            histograms = sorted((key, list(h.buckets), h.total, h.count) for key, h in self._seconds.items())
            started = sorted(self._started.items())
        lines = _family(INVOCATIONS, "counter", "Function metrics")
        lines += [_sample(INVOCATIONS, {"function_name": f, "code": c}, n) for (f, c), n in completed]
        lines += _family(SECONDS, "histogram", "Function time taken")
        for (function, code), buckets, total, count in histograms:
            labels = {"function_name": function, "code": code}
            for bound, n in zip(BUCKETS, buckets):
                lines.append(_sample(SECONDS + "_bucket", {**labels, "le": _number(bound)}, n))
            lines.append(_sample(SECONDS + "_bucket", {**labels, "le": "+Inf"}, count))
            lines.append(_sample(SECONDS + "_sum", labels, total))
            lines.append(_sample(SECONDS + "_count", labels, count))
        lines += _family(SERVICE_COUNT, "gauge", "Current count of replicas for function")
        lines += [_sample(SERVICE_COUNT, {"function_name": f}, n) for f, n in sorted(service_counts.items())]
        lines += _family(STARTED, "counter", "The total number of function HTTP requests started.")
        lines += [_sample(STARTED, {"function_name": f}, n) for f, n in started]
        return "\n".join(lines) + "\n"


def _family(name: str, kind: str, help_text: str) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    pairs = ",".join(f'{key}="{_escape(str(val))}"' for key, val in labels.items())
    return f"{name}{{{pairs}}} {_number(value)}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    """Integers without a decimal point (as client_golang writes `le="1"`), other floats in full."""
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer()):
        return str(int(value))
    return repr(float(value))

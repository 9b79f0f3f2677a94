"""`--metrics-lines`: `name=value` lines on stdout as the job's evaluations are read, for Katib's StdOut collector.

Katib's metrics collector reads a trial's stdout: a line that starts with an RFC 3339 timestamp and a space is
stamped with it, and every `name=value` on it is a metric whose value matches Katib's default filter
`([\\w|-]+)\\s*=\\s*((-?\\d+)(\\.\\d+)?)`: plain decimals, never `1e-05` (the filter would read 1). So each value
is written positionally, in full.

    2026-12-02T16:40:28.123456Z samples=640 validation_accuracy=0.5 worker_id=0
    2026-12-02T16:40:31.002000Z samples=2000 validation_accuracy=0.9 test_accuracy=0.88 worker_id=1
    2026-12-02T16:40:32.500000Z time_to_target_s=2.5 samples_to_target=1990 reached_target=1 ... cost_usd=0.0000012

One line per evaluation (Point), stamped with the job's clock; one line of the final figures (Run.final) when the
job ends, stamped with its result. A figure the job does not know (None) is left out.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import Any, TextIO

import numpy as np

from faasgd.tracking.feed import Run
from faasgd.tracking.timeline import Point


def number(value: Any) -> str:
    """A value as Katib's default filter reads it whole: an integer, or a decimal without an exponent."""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return np.format_float_positional(float(value), trim="-")


def stamp(at: float) -> str:
    """RFC 3339 in UTC with microseconds (Go's time.RFC3339Nano parses it)."""
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def line(at: float, figures: dict[str, Any]) -> str:
    return " ".join([stamp(at)] + [f"{name}={number(value)}" for name, value in figures.items() if value is not None])


class MetricLines:
    """The sink: one line per evaluation as it is read, the final figures at the end."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream  # None: sys.stdout at each write

    def write(self, text: str) -> None:
        out = self.stream or sys.stdout
        out.write(text + "\n")
        out.flush()

    def point(self, point: Point) -> None:
        self.write(line(point.at, {"samples": point.samples, "validation_accuracy": point.accuracy,
                                   "test_accuracy": point.test_accuracy, "worker_id": point.worker_id}))

    def finish(self, run: Run) -> None:
        self.write(line(float(run.result.get("finished_at") or 0.0), run.final()))

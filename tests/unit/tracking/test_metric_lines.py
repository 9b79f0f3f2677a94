"""Katib's StdOut collector reads our lines: its default filter, applied as its parser does, finds every figure whole."""

import io
import re
from datetime import datetime

import pytest

from faasgd.errors import TrackerFailed
from faasgd.tracking.feed import Feed, Run
from faasgd.tracking.metric_lines import MetricLines, number
from faasgd.tracking.timeline import Point

# Katib's default filter (pkg/metricscollector/v1beta1/common DefaultFilter) and its text parser's split: a first word
# that parses as RFC 3339 is the line's timestamp
KATIB_FILTER = re.compile(r"([\w|-]+)\s*=\s*((-?\d+)(\.\d+)?)")


def katib_reads(text):
    found = []
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))  # RFC 3339
        found.append({m.group(1): float(m.group(2)) for m in KATIB_FILTER.finditer(line)})
    return found


def test_numbers_are_whole_for_the_filter_never_exponents():
    assert [number(v) for v in (True, 3, 0.5, 1.2e-05, 2.0)] == ["1", "3", "0.5", "0.000012", "2"]


def test_each_point_as_it_is_read_then_the_final_figures():
    out = io.StringIO()
    events = [{"event": "check", "worker_id": 0, "samples": 640, "accuracy": 0.5, "at": 1_800_000_000.25}]
    feed = Feed([MetricLines(out)], lambda start: events[start:])
    status = {"workers": [{"shard_size": 900}, {"shard_size": 900}], "config": {}, "created_at": 1_800_000_000.0}
    feed(status)
    assert katib_reads(out.getvalue()) == [{"samples": 640, "validation_accuracy": 0.5, "worker_id": 0}]
    events.append({"event": "epoch", "worker_id": 1, "epoch": 1, "accuracy": 0.75, "test_accuracy": 0.7,
                   "at": 1_800_000_001.0})
    feed(status)
    feed.finish(status, {"job_id": "j1", "reached_target": True, "time_to_target_s": 1.5, "cost_usd": 1.2e-05,
                         "final_test_accuracy": None, "finished_at": 1_800_000_002.0})
    read = katib_reads(out.getvalue())
    assert read[1] == {"samples": 640, "validation_accuracy": 0.75, "test_accuracy": 0.7, "worker_id": 1}
    assert read[2] == {"time_to_target_s": 1.5, "reached_target": 1, "cost_usd": 1.2e-05}  # unknown figures left out
    assert out.getvalue().splitlines()[0].startswith("2027-01-15T08:00:00.250000Z ")
    assert len(read) == 3  # a point is printed once, however many reads see it


def test_a_run_reports_the_figures_its_result_knows():
    run = Run(job_id="j", config={}, result={"samples": 10, "reached_target": False, "cpu_s": None}, created_at=None,
              run_start=None, crossing=None, train_rows=0, points=[Point(1.0, 1, 0.5, None, 0, "check", None)])
    assert run.final() == {"samples": 10.0, "reached_target": 0.0}


def test_a_failing_tracker_leaves_the_others_their_run_and_is_named():
    class Broken:
        def point(self, point):
            pass

        def finish(self, run):
            raise OSError("disk full")

    out = io.StringIO()
    feed = Feed([Broken(), MetricLines(out)], lambda start: [])
    with pytest.raises(TrackerFailed) as error:
        feed.finish({"workers": [{"shard_size": 10}]}, {"job_id": "j1", "samples": 10, "finished_at": 1.0})
    assert "Broken: OSError: disk full" in str(error.value) and "j1" in str(error.value)
    assert katib_reads(out.getvalue()) == [{"samples": 10}]

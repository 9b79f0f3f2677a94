"""bench/peers.py's direct-64 row (`faasgd train --direct`, 2 worker processes, a redis-server of its own), run as
the bench runs it (a fresh process), against this test's stopwatch on the same clock (CLOCK_MONOTONIC); and the
arithmetic that turns a job's epoch events into seconds from a row's launch."""

from __future__ import annotations

import time

import pytest

from support.bench_scripts import load_bench

pytestmark = pytest.mark.integration
peers = load_bench("peers")


def test_the_direct_row_lies_within_the_outer_stopwatch():
    started = time.monotonic()
    row = peers.in_subprocess("direct-64", 1, 0.70)  # one epoch: both workers evaluate the test rows at its end
    outer_s = time.monotonic() - started
    assert "error" not in row, row.get("error")
    # the job was created inside direct.train's call (after `ready`), and its span on the store's clock fits in it
    assert 0 < row["ready_s"] <= row["job_offset_s"] < row["time_to_target_s"] <= outer_s
    assert row["final_accuracy"] >= 0.70 and row["samples_per_s"] > 0
    assert row["passes_to_target"] == 1  # the one pass's test evaluation crossed
    # both workers' peaks were read while they ran (they are the forkserver's children, not this row's): each holds
    # at least its data rows (55,000 x 784 uint8 split in two: ~21 MB) and numpy, and no copy of the whole set
    assert len(row["peak_rss_mb"]) == 2 and all(40 < mb < 400 for mb in row["peak_rss_mb"]), row["peak_rss_mb"]
    split = row["split"]  # the workers' parts inside their calls' time
    assert split["compute_s"] > 0 and split["batches_s"] > 0 and split["eval_s"] > 0
    assert split["compute_s"] + split["batches_s"] + split["eval_s"] <= split["worker_s"]


def test_times_count_from_the_launch_on_the_test_curve_only():
    events = [{"event": "epoch", "epoch": 1, "at": 103.0, "test_accuracy": None},  # another worker evaluated it
              {"event": "check", "at": 103.5, "accuracy": 0.9},  # validation only: not a test figure
              {"event": "epoch", "epoch": 3, "at": 104.5, "test_accuracy": 0.84},
              {"event": "epoch", "epoch": 2, "at": 104.0, "test_accuracy": 0.86},  # not always in time order
              {"event": "epoch", "epoch": 4, "at": 106.0, "test_accuracy": 0.91}]
    status = {"created_at": 100.0, "events": events}
    # the job ran from 100 to 110 on its clock; the row saw its result 15 s after launch: the job began at 5 s
    reached, lower, offset = peers.times_to_accuracy(status, 110.0, 15.0, 0.85, (0.80, 0.90, 0.95))
    assert offset == pytest.approx(5.0) and reached == pytest.approx(9.0)
    assert lower == {"0.8": pytest.approx(9.0), "0.9": pytest.approx(11.0)}
    assert peers.times_to_accuracy({**status, "events": events[:2]}, 110.0, 15.0, 0.85)[:2] == (None, {})
    # the passes to the target: the crossing's epoch, as the one-process rows count their passes
    assert peers.passes_to_target(status, 0.85) == 2 and peers.passes_to_target(status, 0.9) == 4
    assert peers.passes_to_target({**status, "events": events[:2]}, 0.85) is None

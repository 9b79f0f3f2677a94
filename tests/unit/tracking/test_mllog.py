"""The MLPerf-format log of a run, checked by mlperf-logging's own compliance checker with faasgd's rules file."""

import json

import pytest

pytest.importorskip("mlperf_logging")

from faasgd.tracking import mllog  # noqa: E402
from faasgd.tracking.feed import Run  # noqa: E402
from faasgd.tracking.timeline import points  # noqa: E402

CONFIG = {"dataset": "synthetic", "batch_size": 32, "number_of_workers": 2, "learning_rate": 0.1, "seed": 0,
          "invocation_mode": "loop", "algorithm": "downpour", "validation_samples": 0}
EVENTS = [
    {"event": "created", "at": 100.0},
    {"event": "check", "worker_id": 0, "samples": 640, "accuracy": 0.5, "at": 101.0},
    {"event": "epoch", "worker_id": 1, "epoch": 1, "accuracy": 0.7, "test_accuracy": 0.69, "at": 102.0},
    {"event": "epoch", "worker_id": 0, "epoch": 1, "accuracy": None, "test_accuracy": None, "at": 102.1},
    {"event": "check", "worker_id": 0, "samples": 1750, "accuracy": 0.8, "at": 102.5},  # fetched before the epoch's
    {"event": "check", "worker_id": 1, "samples": 2000, "accuracy": 0.9, "test_accuracy": 0.88, "at": 103.0},
    {"event": "check", "worker_id": 0, "samples": 2100, "accuracy": 0.91, "at": 103.5},  # after the crossing
]


def run_of(reached=True):
    return Run(job_id="j1", config=CONFIG, result={"reached_target": reached, "finished_at": 104.0, "samples": 2200},
               created_at=100.0, run_start=100.5, crossing={"at": 103.0, "samples": 1990} if reached else None,
               train_rows=1800, points=points(EVENTS, 1800))


def lines(path):
    return [json.loads(line.removeprefix(":::MLLOG ")) for line in path.read_text().splitlines()]


def test_a_run_that_met_its_target_passes_the_checker_and_its_score_is_the_time_to_target(tmp_path):
    path = tmp_path / "run.mllog"
    mllog.write(run_of(), str(path))
    assert mllog.check(str(path))
    logged = {line["key"]: line for line in lines(path)}
    assert logged["run_stop"]["time_ms"] - logged["run_start"]["time_ms"] == 2500  # crossing at 103.0, start 100.5
    assert logged["run_stop"]["metadata"]["status"] == "success"
    assert logged["global_batch_size"]["value"] == 64 and logged["opt_base_learning_rate"]["value"] == 0.1
    assert logged["train_samples"]["value"] == 1800 and logged["eval_samples"]["value"] == 200
    assert logged["submission_benchmark"]["value"] == "faasgd-synthetic"  # never an MLPerf benchmark's name
    assert logged["run_start"]["metadata"]["file"] == "faasgd/tracking/mllog.py"  # no path of this machine


def test_evaluations_up_to_the_crossing_are_logged_with_their_samples(tmp_path):
    path = tmp_path / "run.mllog"
    mllog.write(run_of(), str(path))
    evals = [(line["value"], line["metadata"]["samples_count"]) for line in lines(path)
             if line["key"] == "eval_accuracy"]
    assert evals == [(0.5, 640), (0.7, 640), (0.8, 1750), (0.9, 2000)]  # the epoch end: the checks' samples so far


def test_a_run_short_of_its_target_stops_aborted_at_its_result(tmp_path):
    path = tmp_path / "run.mllog"
    mllog.write(run_of(reached=False), str(path))
    assert mllog.check(str(path))
    stop = [line for line in lines(path) if line["key"] == "run_stop"][0]
    assert stop["metadata"]["status"] == "aborted" and stop["time_ms"] == 104000


def test_the_rules_fail_a_log_without_its_end_or_with_a_block_left_open(tmp_path):
    path = tmp_path / "run.mllog"
    mllog.write(run_of(), str(path))
    text = path.read_text().splitlines()
    (tmp_path / "no_stop.mllog").write_text("\n".join(x for x in text if '"run_stop"' not in x) + "\n")
    assert not mllog.check(str(tmp_path / "no_stop.mllog"))
    (tmp_path / "open.mllog").write_text("\n".join(x for x in text if '"block_stop"' not in x) + "\n")
    assert not mllog.check(str(tmp_path / "open.mllog"))

"""`faasgd train --direct` with the trackers against a real redis-server, each file read back with its tool's reader:
one job with --mllog, --metrics-lines, --tensorboard and --mlflow sqlite:///F at once."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from faasgd import api, tracking
from faasgd.store import open_store
from support.tensorboard_events import scalars

KATIB_FILTER = re.compile(r"([\w|-]+)\s*=\s*((-?\d+)(\.\d+)?)")  # Katib's default StdOut filter

pytestmark = pytest.mark.e2e

TINY = ["--dataset", "synthetic", "--train-samples", "2000", "--test-samples", "500", "--hidden-sizes", "32",
        "--workers", "2"]


def faasgd(*args, timeout=300, cwd=None):
    environment = {k: v for k, v in os.environ.items() if k.lower() != "store_url"}
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=environment, cwd=cwd)


def mllog_lines(path):
    return [json.loads(line.removeprefix(":::MLLOG ")) for line in path.read_text().splitlines()]


def job_of(stdout):
    return re.search(r"^job (j[0-9a-f]+):", stdout, re.M).group(1)


def test_one_job_with_every_tracker_each_read_back_by_its_tool(redis_server, tmp_path):
    pytest.importorskip("mlperf_logging")
    pytest.importorskip("tensorboardX")
    from faasgd.tracking import mllog

    path, board, runs = tmp_path / "job.mllog", tmp_path / "board", f"sqlite:///{tmp_path / 'mlflow.db'}"
    run = faasgd("train", "--direct", "--store-url", redis_server.url, *TINY, "--mllog", str(path), "--metrics-lines",
                 "--tensorboard", str(board), "--mlflow", runs, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    result = open_store(redis_server.url).get_record(job_of(run.stdout), "result")
    assert mllog.check(str(path))
    logged = mllog_lines(path)
    evals = [line for line in logged if line["key"] == "eval_accuracy"]
    assert len(evals) >= 3 and all(0 <= line["value"] <= 1 for line in evals)
    start, stop = (next(line for line in logged if line["key"] == key) for key in ("run_start", "run_stop"))
    assert stop["metadata"]["status"] == ("success" if result["reached_target"] else "aborted")
    if result["reached_target"]:  # the log's score is the job's time to target (to the millisecond)
        assert abs((stop["time_ms"] - start["time_ms"]) / 1000 - result["time_to_target_s"]) <= 0.002
        assert stop["metadata"]["samples_count"] == result["samples_to_target"]
    assert all(line["metadata"].get("job_id") == result["job_id"] for line in (start, stop))
    # Katib's default filter over the stdout lines that begin with a timestamp (tests/unit/tracking: its parser)
    read = [{m.group(1): float(m.group(2)) for m in KATIB_FILTER.finditer(line)}
            for line in run.stdout.splitlines() if re.match(r"\d{4}-\d\d-\d\dT", line)]
    assert sum("validation_accuracy" in figures for figures in read) >= 3
    assert read[-1]["samples"] == result["samples"] and read[-1]["reached_target"] == result["reached_target"]
    if result["reached_target"]:
        assert read[-1]["time_to_target_s"] == pytest.approx(result["time_to_target_s"])
    # TensorBoard's reader: the job's curve with samples as its step, one run per worker
    curves = scalars(board / result["job_id"])
    assert len(curves["validation_accuracy"]) >= 3
    assert curves["final/samples"][0][1] == result["samples"]
    workers = sorted(p.name for p in (board / result["job_id"]).glob("worker-*"))
    assert workers == ["worker-0", "worker-1"]
    assert sum(scalars(board / result["job_id"] / w)["worker/samples"][0][1] for w in workers) == result["samples"]
    # MLflow's client: one run, the configuration as params, the accuracy curve
    if importlib.util.find_spec("mlflow"):
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=runs)
        logged = client.search_runs([client.get_experiment_by_name("faasgd").experiment_id])
        assert [r.data.tags["job_id"] for r in logged] == [result["job_id"]]
        assert logged[0].data.params["number_of_workers"] == "2"
        assert len(client.get_metric_history(logged[0].info.run_id, "validation_accuracy")) >= 3


def test_a_finished_job_is_tracked_from_python_through_the_api(redis_server, tmp_path):
    pytest.importorskip("mlperf_logging")
    from faasgd.tracking import mllog

    run = faasgd("train", "--direct", "--store-url", redis_server.url, *TINY, "--json")
    assert run.returncode == 0, run.stderr
    job = api.job(json.loads(run.stdout)["job_id"], store_url=redis_server.url)
    status = tracking.follow(job, tracking.sinks(mllog=str(tmp_path / "again.mllog")), timeout_s=30)
    assert status["state"] == "done" and mllog.check(str(tmp_path / "again.mllog"))


def test_a_tracker_file_in_no_folder_is_refused_before_anything_starts(redis_server, tmp_path):
    run = faasgd("train", "--direct", "--store-url", redis_server.url, *TINY, "--mllog", str(tmp_path / "no" / "x"))
    assert run.returncode == 2 and "--mllog" in run.stderr  # each flag's refusals: tests/unit/tracking

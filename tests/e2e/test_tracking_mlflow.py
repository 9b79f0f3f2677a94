"""`faasgd train --mlflow URI` against a real `mlflow server` (SQLite backend, started here on loopback), read back
with MLflow's own client; and `--mlflow sqlite:///FILE` with MLFLOW_TRACKING_URI, straight into MLflow's backend."""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e
mlflow = pytest.importorskip("mlflow")

from faasgd import api  # noqa: E402
from faasgd.job import model_file  # noqa: E402
from support.mlflow_server import mlflow_server  # noqa: E402

TINY = ["--dataset", "synthetic", "--train-samples", "2000", "--test-samples", "500", "--hidden-sizes", "32",
        "--workers", "2"]


def faasgd(*args, env=None, cwd=None):
    environment = {k: v for k, v in os.environ.items() if k.lower() not in ("store_url", "mlflow_tracking_uri")}
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**environment, **(env or {})}, cwd=cwd)


def the_run(client, job_id):
    experiment = client.get_experiment_by_name("faasgd")
    runs = client.search_runs([experiment.experiment_id], f"tags.job_id = '{job_id}'")
    assert len(runs) == 1
    return runs[0]


def test_one_run_per_job_on_a_tracking_server(redis_server, tmp_path):
    from mlflow import MlflowClient

    with mlflow_server(tmp_path) as url:
        run = faasgd("train", "--direct", "--store-url", redis_server.url, *TINY, "--mlflow", url, "--json")
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        client = MlflowClient(tracking_uri=url)
        logged = the_run(client, result["job_id"])
        config = api.job(result["job_id"], store_url=redis_server.url).status()["config"]  # resolved, redacted
        assert logged.data.params["learning_rate"] == str(config["learning_rate"])
        assert logged.data.params["hidden_sizes"] == "[32]" and set(logged.data.params) == set(config)
        assert logged.data.tags["store"] == "redis" and logged.data.tags["mode"] == config["invocation_mode"]
        assert logged.data.tags["algorithm"] == config["algorithm"] and logged.info.run_name == result["job_id"]
        history = client.get_metric_history(logged.info.run_id, "validation_accuracy")
        assert len(history) >= 3 and all(0 <= m.value <= 1 and m.step > 0 for m in history)
        rates = client.get_metric_history(logged.info.run_id, "samples_per_s")  # each check's, then the result's
        assert len(rates) >= 2 and rates[-1].value == pytest.approx(result["samples_per_s"]) and \
            all(m.value > 0 for m in rates)
        events = api.job(result["job_id"], store_url=redis_server.url).events()
        for i in (0, 1):  # a worker's rate at each of its epoch ends (one cut short by the target has none)
            ends = [e for e in events if e["event"] == "epoch" and e["worker_id"] == i]
            assert len(client.get_metric_history(logged.info.run_id, f"worker_{i}_samples_per_s")) == len(ends)
        assert logged.data.metrics["samples"] == result["samples"] and logged.data.metrics["cpu_s"] == \
            pytest.approx(result["cpu_s"])
        if result["reached_target"]:
            assert logged.data.metrics["time_to_target_s"] == pytest.approx(result["time_to_target_s"])
            assert logged.data.metrics["samples_to_target"] == result["samples_to_target"]
        assert logged.info.status == "FINISHED" and logged.info.end_time == round(result["finished_at"] * 1000)
        folder = client.download_artifacts(logged.info.run_id, "result.json", str(tmp_path))
        assert json.loads(open(folder).read()) == result
        model = model_file.from_npz(client.download_artifacts(logged.info.run_id, "model.npz", str(tmp_path)))
        assert (model.job_id, model.version) == (result["job_id"], result["model_version"])  # `faasgd model`'s file


def test_mlflow_tracking_uri_names_a_sqlite_backend(redis_server, tmp_path):
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'runs.db'}"
    run = faasgd("train", "--direct", "--store-url", redis_server.url, *TINY, "--mlflow",
                 env={"MLFLOW_TRACKING_URI": uri}, cwd=tmp_path)  # its artifacts: ./mlruns
    assert run.returncode == 0, run.stderr
    job_id = re.search(r"^job (j[0-9a-f]+):", run.stdout, re.M).group(1)
    assert len(MlflowClient(tracking_uri=uri).get_metric_history(the_run(MlflowClient(tracking_uri=uri), job_id)
                                                                 .info.run_id, "validation_accuracy")) >= 3
    refused = faasgd("train", "--direct", "--store-url", redis_server.url, *TINY, "--mlflow")
    assert refused.returncode == 2 and "MLFLOW_TRACKING_URI" in refused.stderr

"""`--mlflow [URI]`: one MLflow run per job, written through MlflowClient when the job ends.

The tracking URI is the flag's, else MLFLOW_TRACKING_URI: a tracking server (`http://127.0.0.1:5000`) or a
backend of MLflow's own (`sqlite:///mlflow.db`). The run, in the experiment `faasgd` (MLFLOW_EXPERIMENT_NAME
names another), is named after the job and holds:
    params     the job's resolved configuration (its status' `config`: store URLs already redacted)
    metrics    validation_accuracy, test_accuracy at every evaluation (step: samples, timestamp: the job's clock),
               worker_<i>_validation_accuracy for the evaluations each worker made; samples_per_s at every check
               (the job's, since its run start), worker_<i>_samples_per_s at each of its epoch ends (step: its own
               samples; timeline.Rate); the final figures
               (feed.FINAL: time and samples to target, CPU seconds, cost, ...) at the last step
    tags       job_id, store, mode (invocation_mode), algorithm, state, commit (of the faasgd source, from a checkout)
    artifacts  result.json: the job's result record; model.npz: its model file (`faasgd model`'s), when it has one
Start and end times are the job's creation and its result; the run ends FINISHED when the job is done, else FAILED.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile

from mlflow import MlflowClient
from mlflow.entities import Metric, Param

from faasgd.errors import FaasgdError
from faasgd.tracking.feed import Run
from faasgd.tracking.timeline import Point

EXPERIMENT = "faasgd"
BATCH = 500  # metrics per log_batch call (MLflow takes at most 1000, and 100 params)


def ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def params_of(config: dict) -> list[Param]:
    return [Param(key, json.dumps(value) if isinstance(value, (list, dict)) else str(value))
            for key, value in sorted(config.items())]


def tags_of(run: Run) -> dict[str, str]:
    config = run.config
    store = config.get("store") or str(config.get("store_url") or "").split(":", 1)[0]
    tags = {"job_id": run.job_id, "store": store, "mode": str(config.get("invocation_mode")),
            "algorithm": str(config.get("algorithm")), "state": str(run.result.get("state"))}
    return {**tags, "commit": commit()} if commit() else tags


@functools.cache
def commit() -> str:
    """The git commit of the faasgd source this process runs, when it runs from a checkout ("" otherwise)."""
    try:
        done = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def metrics_of(run: Run) -> list[Metric]:
    found = []
    for point in run.points:
        found += point_metrics(point)
    for rate in run.rates() + run.worker_rates:
        name = "samples_per_s" if rate.worker_id is None else f"worker_{rate.worker_id}_samples_per_s"
        found.append(Metric(name, rate.samples_per_s, ms(rate.at), rate.samples))
    last = max([p.samples for p in run.points] + [int(run.result.get("samples") or 0)])
    end = ms(run.result.get("finished_at")) or 0
    found += [Metric(name, value, end, last) for name, value in run.final().items()]
    return found


def point_metrics(point: Point) -> list[Metric]:
    at = ms(point.at)
    found = [Metric("validation_accuracy", point.accuracy, at, point.samples),
             Metric(f"worker_{point.worker_id}_validation_accuracy", point.accuracy, at, point.samples)]
    if point.test_accuracy is not None:
        found.append(Metric("test_accuracy", float(point.test_accuracy), at, point.samples))
    return found


def log(run: Run, uri: str, experiment: str | None = None) -> str:
    """The job's MLflow run at `uri`; its run id."""
    client = MlflowClient(tracking_uri=uri)
    return log_to(client, experiment_of(client, experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT),
                  run)


def experiment_of(client: MlflowClient, name: str) -> str:
    """The id of the experiment `name`, made when there is none."""
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found else client.create_experiment(name)


def log_to(client: MlflowClient, experiment_id: str, run: Run, name: str | None = None,
           tags: dict[str, str] | None = None) -> str:
    """The job's run in the experiment, named `name` (default: the job's id) with `tags` beside its own; its id."""
    created = client.create_run(experiment_id, start_time=ms(run.created_at), run_name=name or run.job_id,
                                tags={**tags_of(run), "mlflow.source.name": "faasgd train", **(tags or {})})
    run_id = created.info.run_id
    params, metrics = params_of(run.config), metrics_of(run)
    for i in range(0, len(params), 100):
        client.log_batch(run_id, params=params[i:i + 100])
    for i in range(0, len(metrics), BATCH):
        client.log_batch(run_id, metrics=metrics[i:i + BATCH])
    client.log_text(run_id, json.dumps(run.result, indent=2, sort_keys=True), "result.json")
    model = read_model(run)
    if model is not None:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.npz")
            with open(path, "wb") as out:
                out.write(model)
            client.log_artifact(run_id, path)
    client.set_terminated(run_id, status="FINISHED" if run.result.get("state") == "done" else "FAILED",
                          end_time=ms(run.result.get("finished_at")))
    return run_id


def read_model(run: Run) -> bytes | None:
    """The job's model file, or None when it has none to read (a job that failed before any parameters)."""
    if run.read_model is None:
        return None
    try:
        return run.read_model()
    except FaasgdError:
        return None


class MLflow:
    """The sink: logs the job's run when it ends."""

    def __init__(self, uri: str):
        self.uri = uri
        self.run_id: str | None = None

    def point(self, point: Point) -> None:
        pass  # logged whole from the run, with the job's timestamps

    def finish(self, run: Run) -> None:
        # MLflow's client prints where a run on a server is viewed ("View run ... at: URL") on stdout, which
        # `faasgd train --json` keeps for the result alone: whatever it prints goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            self.run_id = log(run, self.uri)

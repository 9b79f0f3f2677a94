"""A batch's MLflow experiment as it is written, through a stand-in for MlflowClient that keeps what it is told (the
real backend: tests/e2e/test_batch_mlflow.py): a round whose job ended is a child of its configuration's parent, a
round that failed before its job existed a FAILED child with its error, a parent with a failed round ends FAILED
with the means of the rounds that ran, and a second batch of the same name and second gets its own experiment."""

from types import SimpleNamespace

import pytest

pytest.importorskip("mlflow")

from faasgd.tracking.mlflow_batch import BatchExperiment, Round  # noqa: E402

STATUS = {"job_id": "j1", "state": "done", "created_at": 100.0, "config": {"learning_rate": 0.1, "seed": 0},
          "workers": [{"shard_size": 900, "intervals": [[100.5, 103.0]], "samples": 2000}],
          "events": [{"event": "check", "worker_id": 0, "samples": 1000, "accuracy": 0.5, "at": 101.5},
                     {"event": "check", "worker_id": 0, "samples": 2000, "accuracy": 0.9, "at": 102.5}],
          "result": {"job_id": "j1", "state": "done", "samples": 2000, "time_to_target_s": 2.0,
                     "reached_target": True, "cost_usd": 0.5, "finished_at": 103.0}}


class Client:
    """What MlflowClient is told, by run: name, tags, params, metrics, status."""

    def __init__(self):
        self.experiments: dict[str, dict] = {}
        self.runs: dict[str, dict] = {}

    def get_experiment_by_name(self, name):
        return self.experiments.get(name) and SimpleNamespace(**self.experiments[name])

    def create_experiment(self, name, artifact_location=None, tags=None):
        self.experiments[name] = {"experiment_id": str(len(self.experiments)), "tags": tags, "where": artifact_location}
        return self.experiments[name]["experiment_id"]

    def create_run(self, experiment_id, start_time=None, run_name=None, tags=None):
        run_id = f"r{len(self.runs)}"
        self.runs[run_id] = {"name": run_name, "tags": dict(tags or {}), "params": {}, "metrics": [], "status": None}
        return SimpleNamespace(info=SimpleNamespace(run_id=run_id))

    def log_batch(self, run_id, metrics=(), params=(), tags=()):
        self.runs[run_id]["metrics"] += [(m.key, m.value, m.step) for m in metrics]
        self.runs[run_id]["params"].update({p.key: p.value for p in params})

    def log_text(self, run_id, text, path):
        pass

    def set_terminated(self, run_id, status=None, end_time=None):
        self.runs[run_id]["status"] = status


def test_rounds_are_children_of_their_configuration_and_a_failed_round_fails_its_parent(tmp_path):
    client = Client()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    batch = BatchExperiment(uri, "m", "2026-12-03 08:00:00", {"rounds": "2"}, client=client)
    values = {"number_of_workers": 1, "store": "redis"}
    ran = batch.round(Round(1, "number_of_workers=1", values, 1, STATUS, {"state": "done", "cost_usd": 0.25}))
    failed = batch.round(Round(1, "number_of_workers=1", values, 2, None,
                               {"state": "failed", "error": "FunctionError: emnist-setup answered 503"}))
    batch.finish()
    assert client.experiments["test.sh m 2026-12-03 08:00:00"]["where"] == (tmp_path / "mlruns").as_uri()
    parent_id = client.runs[ran]["tags"]["mlflow.parentRunId"]
    parent, child, lost = client.runs[parent_id], client.runs[ran], client.runs[failed]
    assert lost["tags"]["mlflow.parentRunId"] == parent_id and parent["name"] == "number_of_workers=1"
    assert parent["params"] == {"number_of_workers": "1", "store": "redis"} and parent["status"] == "FAILED"
    figures = {key: value for key, value, _ in parent["metrics"]}
    assert (figures["rounds"], figures["rounds_done"], figures["time_to_target_s"]) == (2, 1, 2.0)
    assert child["name"] == "round 1 (j1)" and child["tags"]["round"] == "1" and child["status"] == "FINISHED"
    assert ("cost_usd", 0.25, 2000) in child["metrics"]  # at the batch's prices, at the last step
    assert [(v, s) for k, v, s in child["metrics"] if k == "samples_per_s"][:2] == [(1000.0, 1000), (1000.0, 2000)]
    assert lost["status"] == "FAILED" and "503" in lost["tags"]["error"] and lost["name"] == "round 2"
    again = BatchExperiment(uri, "m", "2026-12-03 08:00:00", {}, client=client)  # the same matrix, the same second
    assert again.name == "test.sh m 2026-12-03 08:00:00 (2)"

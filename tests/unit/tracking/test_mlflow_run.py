"""What a job's MLflow run holds, before any server: params, tags, metrics with samples as their step."""

import pytest

pytest.importorskip("mlflow")

from faasgd.tracking import mlflow_run  # noqa: E402
from faasgd.tracking.feed import Run  # noqa: E402
from faasgd.tracking.timeline import Rate, points  # noqa: E402

EVENTS = [{"event": "check", "worker_id": 0, "samples": 640, "accuracy": 0.5, "at": 101.0},
          {"event": "check", "worker_id": 1, "samples": 2000, "accuracy": 0.9, "test_accuracy": 0.88, "at": 103.0}]
CONFIG = {"hidden_sizes": [32], "learning_rate": 0.1, "store": "", "store_url": "redis://:***@h:1/0",
          "invocation_mode": "loop", "algorithm": "downpour"}


def run_of():
    return Run(job_id="j1", config=CONFIG, created_at=100.0, run_start=100.5, crossing=None, train_rows=1800,
               result={"state": "done", "samples": 2100, "time_to_target_s": 2.5, "cpu_s": None,
                       "finished_at": 104.0}, points=points(EVENTS, 1800),
               worker_rates=[Rate(102.5, 900, 450.0, 1)])


def test_params_are_the_configuration_and_tags_name_store_mode_algorithm():
    assert {p.key: p.value for p in mlflow_run.params_of(CONFIG)}["hidden_sizes"] == "[32]"
    tags = mlflow_run.tags_of(run_of())
    assert {k: v for k, v in tags.items() if k != "commit"} == {"job_id": "j1", "store": "redis", "mode": "loop",
                                                                "algorithm": "downpour", "state": "done"}
    assert tags.get("commit", "") == mlflow_run.commit() and len(mlflow_run.commit()) in (0, 40)


def test_metrics_step_by_samples_on_the_jobs_clock_and_the_final_figures_at_the_last_step():
    metrics = {(m.key, m.step): (m.value, m.timestamp) for m in mlflow_run.metrics_of(run_of())}
    assert metrics[("validation_accuracy", 640)] == (0.5, 101000)
    assert metrics[("worker_1_validation_accuracy", 2000)] == (0.9, 103000)
    assert metrics[("test_accuracy", 2000)] == (0.88, 103000)
    assert metrics[("time_to_target_s", 2100)] == (2.5, 104000) and ("cpu_s", 2100) not in metrics


def test_samples_per_s_at_every_check_and_each_workers_at_its_epoch_ends():
    metrics = {(m.key, m.step): (m.value, m.timestamp) for m in mlflow_run.metrics_of(run_of())}
    assert metrics[("samples_per_s", 640)] == (640 / 0.5, 101000)  # since the run start, 100.5
    assert metrics[("samples_per_s", 2000)] == (2000 / 2.5, 103000)
    assert metrics[("worker_1_samples_per_s", 900)] == (450.0, 102500)  # step: the worker's own samples

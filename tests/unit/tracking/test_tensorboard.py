"""A job's TensorBoard files, read back with TensorBoard's own reader: its curves and one run per worker."""

import pytest

pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")

from faasgd.tracking import tensorboard  # noqa: E402
from faasgd.tracking.feed import Run  # noqa: E402
from faasgd.tracking.timeline import Rate, points  # noqa: E402
from support.tensorboard_events import scalars  # noqa: E402

EVENTS = [
    {"event": "check", "worker_id": 0, "samples": 640, "accuracy": 0.5, "at": 101.0},
    {"event": "epoch", "worker_id": 1, "epoch": 1, "accuracy": 0.7, "test_accuracy": 0.69, "at": 102.0},
    {"event": "check", "worker_id": 1, "samples": 2000, "accuracy": 0.9, "test_accuracy": 0.88, "at": 103.0},
]


def test_the_curves_and_one_run_per_worker(tmp_path):
    run = Run(job_id="j1", config={"dataset": "synthetic", "learning_rate": 0.1},
              result={"samples": 2100, "time_to_target_s": 2.5, "reached_target": True, "finished_at": 104.0},
              created_at=100.0, run_start=100.5, crossing={"at": 103.0, "samples": 2000}, train_rows=1800,
              points=points(EVENTS, 1800), workers=[{"samples": 1100, "pushes": 7, "cpu_s": 0.25},
                                                     {"samples": 1000, "pushes": 6, "cpu_s": 0.2}],
              worker_rates=[Rate(102.0, 900, 600.0, 1)])
    root = tensorboard.write(run, str(tmp_path))
    job = scalars(root)
    assert [(step, round(value, 4), wall) for step, value, wall in job["validation_accuracy"]] == \
        [(640, 0.5, 101.0), (640, 0.7, 102.0), (2000, 0.9, 103.0)]  # step: samples; wall time: the job's clock
    assert [step for step, _, _ in job["test_accuracy"]] == [640, 2000]
    assert job["final/time_to_target_s"] == [(2100, 2.5, 104.0)] and job["final/reached_target"][0][1] == 1.0
    workers = [scalars(tmp_path / "j1" / f"worker-{i}") for i in (0, 1)]
    assert [len(w["validation_accuracy"]) for w in workers] == [1, 2]
    assert workers[0]["worker/pushes"] == [(1100, 7.0, 104.0)] and workers[1]["worker/cpu_s"][0][1] == pytest.approx(0.2)
    assert [(step, round(value, 3), wall) for step, value, wall in job["samples_per_s"]] == \
        [(640, 1280.0, 101.0), (2000, 800.0, 103.0)]  # the checks' samples since the run start (100.5)
    assert workers[1]["worker/samples_per_s"] == [(900, 600.0, 102.0)] and "worker/samples_per_s" not in workers[0]

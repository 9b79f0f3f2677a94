"""How `faasgd status` tells a stacking job from an emnist one, and what it prints for it."""

import io

from rich.console import Console

from faasgd.cli.stacking_status import is_stacking_job, print_status
from faasgd.job import new_job_id
from faasgd.stacking.records import new_job_id as new_stacking_id


def test_the_drivers_ids_are_stacking_jobs_and_setups_are_not():
    assert all(is_stacking_job(new_stacking_id()) for _ in range(20))
    assert not any(is_stacking_job(new_job_id()) for _ in range(20))
    assert not is_stacking_job("s123") and not is_stacking_job("s" + "g" * 15)


def test_a_done_job_prints_each_trainers_score_the_ensemble_and_the_phases():
    out = Console(file=io.StringIO(), width=200)
    print_status({"job_id": "s" + "a" * 15, "state": "done", "base_scores": [0.5, 0.75, 0.625],
                  "ensemble_score": 0.8125, "phases": {"upload_s": 0.1, "train_s": 0.2}, "total_s": 0.35,
                  "config": {"models": [{"model": "Lasso"}, {"model": "LinearSVR"}], "trainers_num": 3,
                             "concurrent_training": False, "transfer": "inline"}}, out)
    text = out.file.getvalue()
    rows = [line.split() for line in text.splitlines()]
    assert ["2", "Lasso", "0.6250"] in rows and ["1", "LinearSVR", "0.7500"] in rows
    assert "ensemble         0.8125   (best base 0.7500)" in text
    assert "upload 0.100 s   train 0.200 s   total 0.350 s" in text and "one after another, transfer inline" in text


def test_a_running_or_failed_job_says_so():
    out = Console(file=io.StringIO(), width=200)
    print_status({"job_id": "s" + "b" * 15, "state": "running", "phase": "train", "config": {}}, out)
    print_status({"job_id": "s" + "c" * 15, "state": "failed", "error": "models: refused", "config": {}}, out)
    text = out.file.getvalue()
    assert "running (phase train)" in text and "failed - models: refused" in text

"""Stragglers on a real Redis: a worker slowed on purpose is slowed (by its record and by a stopwatch), and Downpour's
max_staleness bounds how far the others run ahead of it (its steps read from the store during the run).

Each job runs `faasgd train --direct`'s machinery (cli/direct.py: worker processes) in a thread of this test. Through
the runtime with `--chaos slow:...`: tests/e2e/test_stragglers_e2e.py.
"""

from __future__ import annotations

import threading
import time

import pytest

from faasgd import job
from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.store import open_store

pytestmark = pytest.mark.serial  # compares step times: measured with no other test beside it
BASE = {"dataset": "synthetic", "train_samples": 6_000, "hidden_sizes": [256, 256], "batch_size": 32, "n_fetch": 5,
        "n_push": 5, "target_accuracy": 1.0, "seed": 5, "profile_hz": 0}


def run(server, watch=None, **overrides) -> dict:
    """Run a job to its end; `watch(status)` is called every 10 ms meanwhile. Its final status."""
    config = load_config({}, {**BASE, "store_url": server.url, **overrides})
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    ended: dict = {}
    runner = threading.Thread(target=lambda: ended.update(direct.run_job(config, store, job_id, 120.0)), daemon=True)
    runner.start()
    while runner.is_alive():
        if watch is not None:
            watch(job.read_status(store, job_id))
        runner.join(0.01)
    assert ended["result"]["state"] == "done", ended["result"]
    return ended


def per_step(worker: dict) -> float:
    return worker["train_s"] / worker["step"]


def test_a_slowed_worker_takes_its_factor_of_time_a_step_and_the_result_names_it(redis_server):
    started = time.monotonic()
    status = run(redis_server, number_of_workers=3, max_epochs=2, slow_factor=4, slow_worker=1)
    stopwatch = time.monotonic() - started
    result, workers = status["result"], {w["worker_id"]: w for w in status["workers"]}
    [straggler] = result["stragglers"]
    assert straggler["worker_id"] == 1 and straggler["slow_factor"] == 4.0 and straggler["steps"] == workers[1]["step"]
    compute = workers[1]["time_split"]["compute"]
    assert straggler["slowed_s"] == pytest.approx(3 * compute, rel=1e-3)  # (4 - 1) x each step's own time
    assert result["slowed_s"] == pytest.approx(straggler["slowed_s"], rel=1e-3)
    assert "slowed_s" not in workers[0] and "slowed_s" not in workers[2]  # the others never slept
    assert stopwatch > straggler["slowed_s"]  # real time: the job lasted at least what the straggler slept
    assert workers[1]["train_s"] >= 4 * compute  # its steps: its own compute, then 3x that asleep
    # against the others': 4x its compute, but 3 workers time-slice 2 cores (the others compute faster while it
    # sleeps) and a step is more than its compute (minibatches, pushes): loosely, 1.5x (unslowed: about 1x)
    assert per_step(workers[1]) > 1.5 * max(per_step(workers[0]), per_step(workers[2]))


def leads(seen: list[int]):
    """A watch noting the largest lead of a running worker over the slowest running one (steps as pushed)."""
    def watch(status: dict) -> None:
        steps = [w["step"] for w in status["workers"] if w and w.get("state") == "running"]
        if len(steps) == 3:  # all running: the lead the bound is about
            seen.append(max(steps) - min(steps))
    return watch


def test_max_staleness_bounds_how_far_the_others_run_ahead_of_a_straggler(redis_server):
    slowed = {"number_of_workers": 3, "max_epochs": 3, "slow_factor": 4, "slow_worker": 2}
    free: list[int] = []
    run(redis_server, leads(free), **slowed)
    bounded: list[int] = []
    status = run(redis_server, leads(bounded), max_staleness=10, **slowed)
    # a worker starts a fetch period within 10 steps of the slowest's last push, then trains n_fetch (5) more
    assert bounded and max(bounded) <= 10 + 5
    assert max(free) > 10 + 5  # without the bound the lead grows past it: the bound is what held it
    result = status["result"]
    assert result["bound_waits"] > 0 and result["bound_wait_s"] > 0
    assert result["model_version"] == result["pushes"]  # waiting loses no push: each applied once


def test_backup_rounds_merge_at_least_w_minus_b_and_every_contribution_exactly_once(redis_server):
    status = run(redis_server, number_of_workers=4, max_epochs=1, algorithm="grad_avg", sync="reduce",
                 backup_workers=1, slow_factor=20, slow_worker=3)
    result, workers = status["result"], {w["worker_id"]: w for w in status["workers"]}
    rounds = result["rounds"]
    assert all(w["rounds"] == rounds for w in workers.values())  # every worker went through every round
    late = {i: w.get("late_rounds", 0) for i, w in workers.items()}
    assert late[3] > 0 and late[0] == 0  # the straggler's contributions were merged without; the merger's never
    merged = result["merged_contributions"]
    assert merged == sum(rounds - n for n in late.values())  # each contribution merged once, none twice, none lost
    assert merged >= rounds * (4 - 1)  # every round merged at least W - b
    assert result["samples"] == merged * 32  # samples count what the model was trained on
    assert len({w["params_digest"] for w in workers.values()}) == 1  # every worker holds the same parameters

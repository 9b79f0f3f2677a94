"""Cancel a running job on a real store (issue "Job control"): every worker stops at its next check, the job ends
`cancelled` within 2 s, its parameters stop changing, its version equals the pushes applied (exactly once), it keeps
what it measured and the last parameters as its model; a second cancel is refused naming the state.

Each job runs `faasgd train --direct`'s machinery (cli/direct.py: worker processes forked from the forkserver) in a
thread of this test, long enough (`max_epochs` 500) that only the cancel ends it. Through the runtime and its HTTP
form: tests/e2e/test_cancel_e2e.py.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from faasgd import job
from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.errors import JobEnded
from faasgd.job import model_file
from faasgd.store import open_store

pytestmark = pytest.mark.serial  # "within 2 s" is a time bound: measured with no other test beside it
SETTINGS = {
    "loop": {"invocation_mode": "loop"},
    "per-iteration": {"invocation_mode": "per-iteration"},
    "single": {"invocation_mode": "single", "number_of_workers": 1},
    "grad_avg": {"algorithm": "grad_avg", "model": "mlp", "sync": "reduce"},
}


def started(store, job_id: str, samples: int, seconds: float = 60.0) -> dict:
    """The job's status once its workers have trained `samples` between them (they have started)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = job.read_status(store, job_id)
        assert status["state"] == "running", status.get("result")
        if sum((w or {}).get("samples", 0) for w in status["workers"]) >= samples:
            return status
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} trained fewer than {samples} samples in {seconds} s")


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("store_name", ["redis", "memcached"])
def test_a_cancelled_job_stops_within_two_seconds_and_keeps_what_it_did(store_name, setting, request):
    server = request.getfixturevalue(f"{store_name}_server")
    overrides = {"dataset": "synthetic", "train_samples": 20_000, "hidden_sizes": [32], "number_of_workers": 2,
                 "max_epochs": 500, "target_accuracy": 1.0, "store_url": server.url, "seed": 3, **SETTINGS[setting]}
    config = load_config({}, overrides)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    ended: dict = {}
    runner = threading.Thread(target=lambda: ended.update(direct.run_job(config, store, job_id, 300.0)), daemon=True)
    runner.start()
    started(store, job_id, 4_000)

    asked = time.monotonic()
    record = job.cancel_job(store, job_id, by="test")
    assert record["by"] == "test" and job.cancel_job(store, job_id) == record  # once is enough: the same record
    while job.read_status(store, job_id)["state"] == "running":
        assert time.monotonic() - asked < 2.0, "still running 2 s after the cancel"
        time.sleep(0.02)
    runner.join(30)
    status = job.read_status(store, job_id)
    result = status["result"]
    assert result["state"] == "cancelled" and status["cancelled"] == record, result
    assert result["samples"] >= 4_000 and result["final_test_accuracy"] is not None  # what it measured is kept
    if setting != "grad_avg":  # Downpour: a version counts pushes; every one applied exactly once
        assert result["model_version"] == result["pushes"] == sum(w["pushes"] for w in status["workers"])

    weights, version = store.get_weights(job_id)
    time.sleep(0.5)
    again, version_again = store.get_weights(job_id)
    assert version_again == version and np.array_equal(weights, again)  # the parameters stopped changing
    assert model_file.read_model(store, job_id).version == result["model_version"]  # the last ones, as its model

    with pytest.raises(JobEnded) as refused:
        job.cancel_job(store, job_id)
    assert "cancelled" in str(refused.value) and refused.value.field == "job_id"
    assert ended.get("state") == "cancelled"  # what `faasgd train --direct` saw


def test_ctrl_c_on_faasgd_train_cancels_its_job(redis_server):
    """Ctrl-C reaches the terminal's whole process group (the command, its forkserver, its workers): the command
    says it is cancelling, the workers ignore the signal and stop as cancelled, the command exits 130."""
    import os
    import re
    import signal
    import subprocess
    import sys

    from support.paths import ROOT

    command = subprocess.Popen(
        [sys.executable, "-m", "faasgd.cli", "train", "--direct", "--store-url", redis_server.url, "--dataset",
         "synthetic", "--train-samples", "20000", "--hidden-sizes", "32", "--workers", "2", "--max-epochs", "500",
         "--target-accuracy", "1.0", "--json"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True)  # --json: every line for a person on stderr
    try:
        found = None
        while found is None:  # the command's first line about the job names it (a warning may come first)
            line = command.stderr.readline()
            assert line, "the command ended before naming its job"
            found = re.search(r"job (j[0-9a-f]+):", line)
        job_id = found.group(1)
        store = open_store(redis_server.url)
        started(store, job_id, 4_000)
        os.killpg(command.pid, signal.SIGINT)
        err = command.stderr.read()
        assert command.wait(60) == 130, err
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
    assert f"Ctrl-C: cancelling job {job_id}" in err
    status = job.read_status(store, job_id)
    assert status["result"]["state"] == "cancelled" and status["cancelled"]["by"] == "cli", status["result"]
    assert all(w["state"] == "finished" for w in status["workers"])  # stopped as cancelled, not killed


def test_a_cancelled_job_resumed_reaches_its_target_with_its_samples_counted_on(redis_server):
    overrides = {"dataset": "synthetic", "train_samples": 20_000, "hidden_sizes": [32], "number_of_workers": 2,
                 "max_epochs": 500, "target_accuracy": 1.0, "store_url": redis_server.url, "seed": 5,
                 "learning_rate": 0.005}  # slow enough that the cancel comes below the resumed job's target
    store = open_store(redis_server.url)
    old_config = load_config({}, overrides)
    old_id = job.create_job(store, old_config)
    runner = threading.Thread(target=lambda: direct.run_job(old_config, store, old_id, 300.0), daemon=True)
    runner.start()
    started(store, old_id, 6_000)
    job.cancel_job(store, old_id)
    runner.join(60)
    old = job.read_status(store, old_id)["result"]
    assert old["state"] == "cancelled"
    last, _ = store.get_weights(old_id)

    # a target still to be reached (the data set tops out near 0.93), and a flag given over the old configuration
    target = min(0.92, max(0.85, old["final_validation_accuracy"] + 0.01))
    assert old["final_validation_accuracy"] < target
    config = load_config({}, {**overrides, "resume_from": old_id, "max_epochs": 100, "target_accuracy": target,
                              "learning_rate": 0.05})
    new_id = job.create_job(store, config)
    first, _ = store.get_weights(new_id)
    assert np.array_equal(first, last)  # it starts where the old job stopped
    result = direct.run_job(config, store, new_id, 300.0)["result"]
    assert result["state"] == "done" and result["reached_target"] and result["resumed_from"] == old_id, \
        (old["final_validation_accuracy"], result["final_validation_accuracy"], config.target_accuracy)
    assert result["samples_to_target"] > old["samples"]  # counted on from the old job's
    assert result["samples_to_target"] <= old["samples"] + result["samples"]
    assert result["time_to_target_s"] > old["wall_s"]


def test_faasgd_resume_as_typed_carries_the_old_configuration_and_the_flags_over_it(redis_server):
    import json
    import subprocess
    import sys

    from support.paths import ROOT

    store = open_store(redis_server.url)
    old_config = load_config({}, {"dataset": "synthetic", "train_samples": 2000, "hidden_sizes": [24],
                                  "number_of_workers": 1, "max_epochs": 1, "target_accuracy": 1.0,
                                  "store_url": redis_server.url})
    old_id = job.create_job(store, old_config)
    assert direct.run_job(old_config, store, old_id, 120.0)["state"] == "done"
    done = subprocess.run([sys.executable, "-m", "faasgd.cli", "resume", old_id, "--direct", "--store-url",
                           redis_server.url, "--max-epochs", "2", "--json", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["resumed_from"] == old_id and result["state"] == "done"
    config = job.read_status(store, result["job_id"])["config"]
    assert config["hidden_sizes"] == [24] and config["max_epochs"] == 2 and config["resume_from"] == old_id

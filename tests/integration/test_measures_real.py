"""Honest measures on a real redis-server and memcached: one clock for every duration, and the job's model
(kept at the crossing, exported, loaded back) having exactly the accuracy the result reports."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from faasgd import job, job_model
from faasgd.cli.main import main
from faasgd.config import load_config
from faasgd.sgd import run_worker
from faasgd.store import open_store

pytestmark = pytest.mark.integration


@pytest.fixture(params=["redis", "memcached"])
def server(request):
    return request.getfixturevalue(f"{request.param}_server")


def run_job(url, **overrides):
    values = {"dataset": "synthetic", "train_samples": 1500, "test_samples": 500, "hidden_sizes": [16],
              "batch_size": 50, "number_of_workers": 2, "n_fetch": 2, "n_push": 2, "max_epochs": 6,
              "target_accuracy": 0.8, "store_url": url, "store_timeout_s": 5.0, **overrides}
    config = load_config({}, values)
    store = open_store(url, timeout_s=2.0)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(config, open_store(url, timeout_s=2.0), job_id, i))
               for i in range(config.number_of_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return config, store, job_id, job.read_status(store, job_id)


def test_the_store_clock_agrees_with_this_host_and_never_runs_back(server):
    store = open_store(server.url, timeout_s=2.0)
    stamps = [store.server_time() for _ in range(5)]
    # Memcached's clock is whole seconds, moved on by a once-a-second timer that lags on a busy host: 3 s slack
    assert stamps == sorted(stamps) and abs(stamps[-1] - __import__("time").time()) < 3.0


def test_durations_are_consistent_and_the_model_has_the_reported_accuracy(server, tmp_path, capsys):
    config, store, job_id, status = run_job(server.url)
    final = status["result"]
    assert final["state"] == "done" and final["reached_target"], final
    created = status["created_at"]
    workers = status["workers"]
    # every stamp is the store's: none before the job's creation, none after the result
    assert all(created <= w["started_at"] <= w["finished_at"] <= final["finished_at"] for w in workers)
    assert created <= status["done"]["at"] <= final["finished_at"]
    assert 0 <= final["time_to_target_s"] <= final["wall_s"]
    assert 0 < final["samples_to_target"] <= final["samples"]
    kept = job_model.read_model(store, job_id)
    assert kept.validation_accuracy == final["final_validation_accuracy"] >= config.target_accuracy
    # out through the CLI, back in, the same accuracy to the last digit
    out = tmp_path / "model.npz"
    env = {"store_url": server.url}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        assert main(["model", job_id, "-o", str(out), "--direct"]) == 0
    loaded = job_model.from_npz(str(out))
    np.testing.assert_array_equal(loaded.params, kept.params)
    assert job_model.evaluate_file(loaded)["test_accuracy"] == final["final_test_accuracy"]
    assert main(["evaluate", str(out)]) == 0
    assert f"test accuracy {final['final_test_accuracy']:.4f}" in capsys.readouterr().out

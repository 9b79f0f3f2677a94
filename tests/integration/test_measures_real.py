"""Honest measures on a real redis-server and memcached: one fine clock for every duration (checked against the
wall time this process saw around the workers), every call of a job counted, and the job's model (kept at the
crossing, exported, loaded back) having exactly the accuracy the result reports."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from faasgd import job
from faasgd.job import model_file
from faasgd.cli.main import main
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.functions.workloads import run_iteration, run_loop_call, run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store

pytestmark = pytest.mark.integration


def run_job(url, **overrides):
    """A job whose workers run in threads here: its config, store, id and status, and the seconds this process saw
    around the workers (an independent measurement of the job's time)."""
    values = {"dataset": "synthetic", "train_samples": 1500, "test_samples": 500, "hidden_sizes": [16],
              "batch_size": 50, "number_of_workers": 2, "n_fetch": 2, "n_push": 2, "max_epochs": 6,
              "target_accuracy": 0.8, "store_url": url, "store_timeout_s": 5.0, **overrides}
    config = load_config({}, values)
    store = open_store(url, timeout_s=2.0)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, open_store(url, timeout_s=2.0), job_id, i),))
               for i in range(config.number_of_workers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    seen = time.perf_counter() - started
    return config, store, job_id, job.read_status(store, job_id), seen


@pytest.mark.serial  # a wall-clock bound: beside another test under -n 2 on the loaded VM the 0.5 s job took 11 s
def test_a_short_job_is_timed_within_ten_percent_of_the_wall_time_around_its_workers(store_server):
    *_, status, seen = run_job(store_server.url, train_samples=3000, test_samples=300, target_accuracy=0.99)
    final = status["result"]
    assert final["state"] == "done", final
    assert 0.1 < seen < 10, seen  # a short job (0.3-0.5 s here): a one-second clock would make it 0, 1 or 2 s
    assert abs(final["wall_s"] - seen) <= 0.1 * seen, (final["wall_s"], seen)
    assert abs(final["samples_per_s"] - final["samples"] / seen) <= 0.1 * final["samples"] / seen
    assert final["wall_s"] != round(final["wall_s"]) and final["samples_per_s"] > 0
    redis = store_server.url.startswith("redis")
    assert final["clock"] == ("redis TIME (1 µs)" if redis else "host time.time (1 µs)")
    # billed: each worker's call from its entry to its last record, at the default 1 GiB: about the wall time each
    assert final["requests"] == 2 and final["duplicate_calls"] == 0 and final["memory_mb"] == 1024
    assert final["wall_s"] <= final["billed_s"] <= 2 * seen * 1.05, (final["billed_s"], seen)
    assert final["billed_gb_s"] == pytest.approx(final["billed_s"])
    assert final["cost_faas_usd"] == pytest.approx(final["billed_gb_s"] * 0.0000166667 + 2 * 0.2e-6)


def run_mode(url, mode):
    """A 2-worker job in `mode` whose calls run here one after another, as a runtime with one slot runs them."""
    config = load_config({}, {"dataset": "synthetic", "train_samples": 2000, "test_samples": 300, "hidden_sizes": [32],
                              "batch_size": 50, "number_of_workers": 2, "n_fetch": 1, "n_push": 2, "max_epochs": 3,
                              "target_accuracy": 0.999, "store_url": url, "store_timeout_s": 5.0,
                              "invocation_mode": mode, "profile_hz": 50})
    store = open_store(url, timeout_s=2.0)
    job_id = job.create_job(store, config)
    for worker in range(config.number_of_workers):
        if mode == "loop":
            run_loop_call(Call(config, store, job_id, worker, f"call-{worker}", loader=load_shard))
            continue
        iteration = 0
        while iteration is not None:
            iteration = run_iteration(Call(config, store, job_id, worker, f"call-{worker}-{iteration}", iteration=iteration, loader=load_shard))["next_iteration"]
    return job.read_status(store, job_id)["result"]


def test_a_per_iteration_job_counts_every_call_as_the_same_job_in_loop_mode(store_server):
    loop, chained = run_mode(store_server.url, "loop"), run_mode(store_server.url, "per-iteration")
    assert loop["state"] == chained["state"] == "done", (loop, chained)
    assert chained["samples"] == loop["samples"] > 0
    assert chained["push_bytes"] == loop["push_bytes"] > 0 and chained["pushes"] == loop["pushes"]
    # the sockets carried at least the pushed payload, in every call (3 calls a worker, each its own profile)
    for figures in (loop, chained):
        assert figures["tx_bytes"] >= figures["push_bytes"], figures
        assert figures["rx_bytes"] >= figures["fetch_bytes"] * 0.9, figures
    assert chained["cpu_s"] >= 0.5 * loop["cpu_s"] > 0, (chained["cpu_s"], loop["cpu_s"])


def test_a_duplicate_delivery_trains_nothing_and_is_counted_and_billed(store_server):
    config = load_config({}, {"dataset": "synthetic", "train_samples": 1200, "test_samples": 200, "hidden_sizes": [8],
                              "batch_size": 50, "number_of_workers": 1, "max_epochs": 2, "target_accuracy": 1.0,
                              "store_url": store_server.url, "invocation_mode": "per-iteration"})
    store = open_store(store_server.url, timeout_s=2.0)
    job_id = job.create_job(store, config)
    first = run_iteration(Call(config, store, job_id, 0, "call-0", iteration=0, loader=load_shard))
    again = run_iteration(Call(config, store, job_id, 0, "call-0-redelivered", iteration=0, loader=load_shard))  # the queue delivers twice
    last = run_iteration(Call(config, store, job_id, 0, "call-1", iteration=1, loader=load_shard))
    assert first["next_iteration"] == 1 and again["duplicate"] and last["state"] == "finished"
    final = job.read_status(store, job_id)["result"]
    assert final["samples"] == 2 * 1080  # two epochs, not three
    assert final["requests"] == 3 and final["duplicate_calls"] == 1
    calls = [e for e in store.events(job_id) if e["event"] == "call"]
    assert [c["kind"] for c in calls] == ["duplicate"] and 0 < calls[0]["billed_s"] < final["billed_s"]


def test_the_store_clock_agrees_with_this_host_and_never_runs_back(store_server):
    store = open_store(store_server.url, timeout_s=2.0)
    stamps = [store.server_time() for _ in range(5)]
    # Memcached's clock is whole seconds, moved on by a once-a-second timer that lags on a busy host: 3 s slack
    assert stamps == sorted(stamps) and abs(stamps[-1] - __import__("time").time()) < 3.0


def test_durations_are_consistent_and_the_model_has_the_reported_accuracy(store_server, tmp_path, capsys):
    config, store, job_id, status, _ = run_job(store_server.url)
    final = status["result"]
    assert final["state"] == "done" and final["reached_target"], final
    created = status["created_at"]
    workers = status["workers"]
    # every stamp is the store's: none before the job's creation, none after the result, each within the error its
    # worker states (half the round trip of its call's one reading of the store's clock: CallClock.error_s)
    for w in workers:
        error = w["clock_error_s"]
        assert 0 <= error < 0.1, w
        assert created - error <= w["started_at"] <= w["finished_at"] <= final["finished_at"] + error, w
    assert created <= status["done"]["at"] <= final["finished_at"]
    assert 0 <= final["time_to_target_s"] <= final["wall_s"]
    assert 0 < final["samples_to_target"] <= final["samples"]
    kept = model_file.read_model(store, job_id)
    assert kept.validation_accuracy == final["final_validation_accuracy"] >= config.target_accuracy
    # out through the CLI, back in, the same accuracy to the last digit
    out = tmp_path / "model.npz"
    env = {"store_url": store_server.url}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        assert main(["model", job_id, "-o", str(out), "--direct"]) == 0
    loaded = model_file.from_npz(str(out))
    np.testing.assert_array_equal(loaded.params, kept.params)
    assert model_file.evaluate_file(loaded)["test_accuracy"] == final["final_test_accuracy"]
    assert main(["evaluate", str(out)]) == 0
    assert f"test accuracy {final['final_test_accuracy']:.4f}" in capsys.readouterr().out


def test_a_workers_time_split_adds_up_within_its_calls_and_its_epochs(store_server):
    config, store, job_id, status, seen = run_job(store_server.url, number_of_workers=1, hidden_sizes=[256],
                                                  train_samples=3000, max_epochs=3, target_accuracy=0.999)
    final = status["result"]
    assert final["state"] == "done", final
    parts = [final[k] for k in ("compute_s", "batches_s", "eval_s", "load_s", "comm_wait_s")]
    assert all(p > 0 for p in parts), parts
    # every part was spent inside the worker's calls, timed on the job's timeline (an independent clock)
    assert sum(parts) <= final["worker_s"] * 1.02 + 0.005, (parts, final["worker_s"])
    assert final["worker_s"] <= seen * 1.05 and final["compute_share"] == final["compute_s"] / final["worker_s"]
    # the steps and their minibatches lie inside the training epochs' own stopwatch (train_s); how much of it they
    # are depends on the machine's load (a share is a bench's figure, not a test's)
    record = job.read_progress(store, job_id, 1)[0]
    inside = record["time_split"]["compute"] + record["time_split"]["batches"]
    assert 0 < inside <= record["train_s"] * 1.001, (inside, record["train_s"])

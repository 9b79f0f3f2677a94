"""The Downpour worker against the in-process memory:// store, on small synthetic data."""

import threading

import numpy as np
import pytest

from faasgd import data, job, model
from faasgd.job import model_file
from faasgd.config import load_config
from faasgd.errors import StoreUnavailable
from faasgd.job.result import RESULT_KEYS
from faasgd.downpour.worker import DownpourWorker, load_worker
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.worker.progress import WorkerProgress
from faasgd.store import keys, open_store
from support.fake_clock import StepClock


def small_config(name, **overrides):
    values = {
        "dataset": "synthetic", "train_samples": 1200, "test_samples": 400, "hidden_sizes": [16],
        "batch_size": 40, "learning_rate": 0.1, "update_rule": "sum", "number_of_workers": 1, "n_fetch": 1, "n_push": 1,
        "max_epochs": 2, "target_accuracy": 1.0, "store_url": f"memory://{name}", "store_timeout_s": 0.3,
    }
    values.update(overrides)
    return load_config({}, values)


def plain_sgd(config, epochs):
    """The oracle: ordinary single-process minibatch SGD with the same seeds and order."""
    sizes = job.network_sizes(config)
    weights = model.init_params(sizes, np.random.default_rng(config.seed), config.activation)
    shard = data.load_shard(config.dataset, "train", 0, 1, limit=config.train_samples, holdout=job.holdout(config)[1])
    rng = np.random.default_rng(config.seed + 0)
    for _ in range(epochs):
        order = rng.permutation(len(shard.y))
        for first in range(0, len(order), config.batch_size):
            rows = order[first:first + config.batch_size]
            _, grad = model.loss_and_grads(weights, sizes, shard.x[rows], shard.y[rows], config.activation,
                                           config.dropout, rng)
            weights = weights - np.float32(config.learning_rate) * grad
    return weights


@pytest.mark.parametrize("n_fetch, n_push, dropout", [(1, 1, 0.0), (3, 5, 0.0), (4, 2, 0.3)])
def test_one_worker_equals_plain_sgd(n_fetch, n_push, dropout):
    config = small_config(f"oracle-{n_fetch}-{n_push}", n_fetch=n_fetch, n_push=n_push, dropout=dropout)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    final = run_worker(Call(config, store, job_id, 0))
    weights, version = store.get_weights(job_id)
    expected = plain_sgd(config, final["epoch"])
    np.testing.assert_allclose(weights, expected, atol=2e-5)
    steps_per_epoch = -(-(1200 - 120) // 40)  # a tenth of the rows is held out for validation
    assert final["step"] == steps_per_epoch * final["epoch"]
    assert version == final["pushes"]
    # a push every n_push steps plus one at each epoch end for the remainder
    per_epoch = steps_per_epoch // n_push + (1 if steps_per_epoch % n_push else 0)
    assert final["pushes"] == per_epoch * final["epoch"]


def test_two_workers_reach_target_and_write_a_complete_result():
    config = small_config("two", number_of_workers=2, n_fetch=2, n_push=2, max_epochs=10, target_accuracy=0.8)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, store, job_id, i),)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    status = job.read_status(store, job_id)
    result = status["result"]
    assert status["state"] == "done"
    assert tuple(result) == RESULT_KEYS
    assert result["error"] is None
    assert result["final_validation_accuracy"] >= 0.8 and result["final_test_accuracy"] is not None
    assert 0 < result["time_to_target_s"] <= result["wall_s"]
    assert 0 < result["samples_to_target"] <= result["samples"]
    assert result["pushes"] == sum(w["pushes"] for w in status["workers"]) == store.get_weights(job_id)[1]
    # both workers share one store client (as on one replica): each counts only its own pushes' conflicts
    assert result["conflicts"] == sum(w["conflicts"] for w in status["workers"])
    assert result["conflicts"] == store.read_counter(job_id, "conflicts")
    assert result["samples"] == sum(w["samples"] for w in status["workers"])
    assert result["staleness_p50"] is not None and result["staleness_p99"] >= result["staleness_p50"]
    assert status["done"]["validation_accuracy"] >= 0.8
    assert all(w["state"] == "finished" for w in status["workers"])


def test_a_worker_stops_at_its_next_fetch_once_the_job_is_done():
    config = small_config("stop", number_of_workers=1, max_epochs=5)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    crossing = {"validation_accuracy": 0.99, "test_accuracy": 0.98, "at": store.server_time(), "samples": 0,
                "epochs": 0.0, "version": 0, "model": "crossing-7"}
    assert job.mark_done(store, job_id, {**crossing, "worker_id": 7})
    assert not job.mark_done(store, job_id, {**crossing, "worker_id": 8})  # only the first counts
    final = run_worker(Call(config, store, job_id, 0))
    assert final["samples"] == 0 and final["epoch"] == 0
    assert store.get_record(job_id, "result")["time_to_target_s"] is not None


class FailingStore:
    """Delegates to a real store, then fails every fetch and push after `healthy` of them (the store went away)."""

    def __init__(self, inner, healthy):
        self.inner, self.healthy = inner, healthy

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _spend(self):
        self.healthy -= 1
        if self.healthy < 0:
            raise StoreUnavailable(self.inner.url, "connection refused")

    def fetch(self, job_id, out=None):
        self._spend()
        return self.inner.fetch(job_id, out=out)

    def push_update(self, job_id, delta, out=None, **push):
        self._spend()
        return self.inner.push_update(job_id, delta, out=out, **push)


def test_store_gone_mid_run_fails_the_worker_after_its_deadline_and_records_it(monkeypatch):
    clock = StepClock(0.0)
    monkeypatch.setattr(DownpourWorker, "clock", staticmethod(clock))
    monkeypatch.setattr(DownpourWorker, "sleep", staticmethod(clock.sleep))
    config = small_config("gone", max_epochs=3)
    inner = open_store(config.store_url)
    job_id = job.create_job(inner, config)
    store = FailingStore(inner, healthy=5)
    with pytest.raises(StoreUnavailable):
        run_worker(Call(config, store, job_id, 0))
    progress = inner.get_record(job_id, keys.progress_name(0))
    assert progress["state"] == "failed"
    assert "memory://gone" in progress["error"]
    assert progress["retries"] >= 1 and clock.now >= config.store_timeout_s  # retried until its deadline
    result = inner.get_record(job_id, "result")
    assert result["state"] == "failed" and "memory://gone" in result["error"]


def test_evaluation_on_raw_test_pixels_in_chunks_equals_the_scaled_oracle(monkeypatch):
    monkeypatch.setattr(model_file, "EVAL_CHUNK", 64)  # several chunks, the last one short
    config = small_config("eval", test_samples=300)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    sizes = job.network_sizes(config)
    trainer = load_worker(config, store, job_id, WorkerProgress.fresh(0, 0))
    assert trainer.test.x.dtype == np.uint8  # a quarter of the float32 memory
    weights = model.init_params(sizes, np.random.default_rng(3))
    scaled = data.load_shard("synthetic", "test", limit=300)
    assert trainer.evaluate(weights, trainer.test) == pytest.approx(model.accuracy(weights, sizes, scaled.x, scaled.y), abs=1e-12)


def test_the_training_shard_stays_uint8_and_each_minibatch_is_scaled_as_the_float32_shard():
    config = small_config("raw-shard")
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    trainer = load_worker(config, store, job_id, WorkerProgress.fresh(0, 0))
    rows = len(trainer.shard.y)
    assert trainer.shard.x.dtype == np.uint8 and trainer.shard.x.nbytes == rows * 784  # a quarter of float32's
    scaled = data.load_shard("synthetic", "train", limit=config.train_samples, holdout=job.holdout(config)[1])
    picked = np.random.default_rng(1).permutation(rows)[:config.batch_size]
    x, y = trainer.minibatch(picked)
    assert x.dtype == np.float32 and x.base is trainer.batch_x  # the reused buffer
    np.testing.assert_array_equal(x, scaled.x[picked])
    np.testing.assert_array_equal(y, scaled.y[picked])


class CountingStore:
    """Delegates to a real store and counts weight reads (a worker's fetches; get_weights for the final evaluation)."""

    def __init__(self, inner):
        self.inner, self.reads = inner, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def fetch(self, job_id, out=None):
        self.reads += 1
        return self.inner.fetch(job_id, out=out)

    def get_weights(self, job_id, out=None):
        self.reads += 1
        return self.inner.get_weights(job_id, out=out)


def test_a_fetch_right_after_a_push_uses_the_weights_the_push_wrote():
    config = small_config("rtt", n_fetch=1, n_push=1, max_epochs=1)
    inner = open_store(config.store_url)
    job_id = job.create_job(inner, config)
    store = CountingStore(inner)
    final = run_worker(Call(config, store, job_id, 0))
    steps = -(-(1200 - 120) // 40)  # the training rows: a tenth is held out for validation
    assert final["fetches"] == steps + 1 and final["pushes"] == steps  # every step fetched, plus the evaluation
    assert store.reads <= 2  # the first fetch (and the final evaluation): the rest came with the pushes


@pytest.mark.parametrize("workers", [1, 3])
def test_the_stop_rule_is_checked_every_period_of_samples_for_one_worker_and_for_several(workers):
    period = 200  # samples of all workers; an epoch is 1080 training rows
    config = small_config(f"period-{workers}", number_of_workers=workers, n_fetch=1, n_push=1, batch_size=20,
                          max_epochs=4, target_accuracy=0.8, eval_every_samples=period)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, store, job_id, i),)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    checks = [e for e in store.events(job_id) if e["event"] == "check"]
    result = job.read_status(store, job_id)["result"]
    assert result["reached_target"], result
    # one check per period crossed by a push: each at the samples its push's parameters hold, within a push of
    # the multiple it passed (a push carries one minibatch of one worker: 20 samples)
    assert checks and all(c["samples"] % period < 20 for c in checks), [c["samples"] for c in checks]
    assert len({c["samples"] // period for c in checks}) == len(checks)
    assert [c for c in checks if c["accuracy"] >= 0.8]
    # the crossing is a check (epoch ends do not decide before the last epoch): the first that met the target, or,
    # with several workers, another's later check that claimed it while that one evaluated (the first claim wins):
    # at most one period per other worker. One worker checks in order: exactly the first
    first = min(c["samples"] for c in checks if c["accuracy"] >= 0.8)
    assert result["samples_to_target"] % period < 20 and result["epochs_to_target"] < 4
    assert first <= result["samples_to_target"] <= first + (workers - 1) * period, (result["samples_to_target"], first)
    if workers == 1:
        assert result["samples_to_target"] == first
    # every period is checked by the worker whose push crossed it, but with several workers a push's result is
    # taken in at that worker's next synchronisation: when the job has ended by then (another worker's later check
    # met the target first), it is not evaluated. Each other worker holds at most one such result, all after the
    # periods checked before them (one worker: none missing)
    periods = sorted(c["samples"] // period for c in checks)
    missing = sorted(set(range(1, periods[-1] + 1)) - set(periods))
    assert len(missing) <= workers - 1 and all(m > periods[-1] - workers for m in missing), (periods, missing)


def test_a_check_leaves_the_budget_room_for_an_epoch_ends_evaluation_of_both_curves(monkeypatch):
    """One worker a round evaluates an epoch end (validation and test rows): until this call's own does, the budget's
    room for one (eval_s) comes from the stop rule's checks, scaled from the validation rows to both."""
    config = small_config("eval-room", test_samples=300)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    trainer = load_worker(config, store, job_id, WorkerProgress.fresh(0, 0))
    now = [100.0]

    def evaluate(weights, rows=None):  # a check's evaluation of the validation rows takes 0.2 s
        now[0] += 0.2
        return 0.0

    monkeypatch.setattr(trainer, "clock", lambda: now[0])
    monkeypatch.setattr(trainer, "evaluate", evaluate)
    assert trainer.eval_s == 0.0
    trainer.stop_rule.check = (1, 40, trainer.exchange.weights.copy())
    trainer.stop_rule.check_target(trainer)
    validation, test = len(trainer.validation.y), len(trainer.test.y)
    assert trainer.eval_s == pytest.approx(0.2 * (validation + test) / validation)

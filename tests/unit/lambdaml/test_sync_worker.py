"""The synchronous worker (grad_avg, model_avg, admm) through the invocation machinery, on memory:// stores,
with threads as workers: oracles, resume mid-round, per-iteration = loop, records and result."""

import numpy as np
import pytest

from faasgd import data, job
from faasgd.job import ending
from faasgd.lambdaml import convex
from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.lambdaml import sync_checkpoint, sync_worker
from faasgd.lambdaml.sync_worker import load_sync_worker
from faasgd.worker import invocation
from faasgd.worker.invocation import Call
from faasgd.worker.budget import CallBudget
from faasgd.store import keys, open_store
from support.sync_drive import config_of, in_threads, killing_first_space, train_job, train_with_worker_1_killed


def final_states(store, job_id, config):
    """Every worker's checkpointed global parameters after its last round."""
    out = []
    for w in range(config.number_of_workers):
        rounds = store.worker_record(job_id, w)["rounds"]
        raw = store.get_blob(job_id, keys.sync_state_name(w, rounds))
        length = job.network_sizes(config)[0] + 1
        out.append(np.frombuffer(raw, "<f4", offset=sync_checkpoint._HEADER.size)[:length])
    return out


def oracle_grad_avg(config):
    """One process: each round the mean gradient over every worker's minibatch of B rows (one N x B batch)."""
    _, held = job.holdout(config)
    shards = [data.load_shard(config.dataset, "train", w, config.number_of_workers, config.train_samples,
                              holdout=held) for w in range(config.number_of_workers)]
    largest = max(len(s.y) for s in shards)
    per_epoch = -(-largest // config.batch_size)
    params = np.zeros(job.network_sizes(config)[0] + 1, np.float32)
    for r in range(per_epoch * config.max_epochs):
        epoch, k = divmod(r, per_epoch)
        xs, ys = [], []
        for w, shard in enumerate(shards):
            order = np.random.default_rng([config.seed, w, epoch]).permutation(len(shard.y))
            rows = order[(k * config.batch_size + np.arange(config.batch_size)) % len(order)]
            xs.append(shard.x[rows])
            ys.append(shard.y[rows])
        _, grad = convex.lr.loss_and_grad(params, np.concatenate(xs), np.concatenate(ys))
        params = params - np.float32(config.learning_rate) * grad
    return params, per_epoch * config.max_epochs


@pytest.mark.parametrize("sync", ["reduce", "reduce_scatter"])
def test_grad_avg_through_the_worker_equals_one_process_with_an_n_times_larger_batch(sync):
    config = config_of(f"sync-oracle-{sync}", sync=sync, number_of_workers=3)
    store, job_id = train_job(config)
    expected, rounds = oracle_grad_avg(config)
    states = final_states(store, job_id, config)
    weights, version = store.get_weights(job_id)
    for state in states:
        np.testing.assert_array_equal(state, states[0])  # every worker holds the same bits
    np.testing.assert_array_equal(weights, states[0])  # the job's weights are the global parameters
    np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-6)
    assert version == rounds
    result = store.get_record(job_id, "result")
    assert result["state"] == "done", result["error"]
    assert result["rounds"] == rounds and result["round_bytes_written"] > 0 and result["round_bytes_read"] > 0
    assert result["barrier_wait_s"] >= 0 and result["final_validation_accuracy"] is not None
    records = [store.worker_record(job_id, w) for w in range(3)]
    assert [r["rounds"] for r in records] == [rounds] * 3
    assert result["round_bytes_written"] == sum(r["round_bytes_written"] for r in records)


def test_model_avg_averaging_every_step_equals_grad_avg():
    a_store, a = train_job(config_of("sync-ma", algorithm="model_avg", local_steps=1))
    b_store, b = train_job(config_of("sync-ga", algorithm="grad_avg"))
    np.testing.assert_allclose(a_store.get_weights(a)[0], b_store.get_weights(b)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("algorithm, model", [("grad_avg", "lr"), ("model_avg", "svm"), ("admm", "lr")])
def test_per_iteration_equals_loop(algorithm, model):
    kwargs = {"algorithm": algorithm, "model": model, "local_steps": 2, "sync": "reduce_scatter"}
    loop_store, loop_job = train_job(config_of(f"loop-{algorithm}", **kwargs))
    config = config_of(f"iter-{algorithm}", invocation_mode="per-iteration", **kwargs)
    iter_store, iter_job = train_job(config, mode="per-iteration")
    np.testing.assert_array_equal(loop_store.get_weights(loop_job)[0], iter_store.get_weights(iter_job)[0])
    assert iter_store.get_record(iter_job, "result")["state"] == "done"


@pytest.mark.parametrize("algorithm, sync, at", [("grad_avg", "reduce_scatter", 23), ("admm", "reduce", 17),
                                                 ("model_avg", "reduce_scatter", 8)])
def test_a_worker_killed_mid_round_resumes_from_its_record_to_the_same_bits(monkeypatch, algorithm, sync, at):
    kwargs = {"algorithm": algorithm, "sync": sync, "local_steps": 2}
    whole_store, whole = train_job(config_of(f"whole-{algorithm}", **kwargs))
    config = config_of(f"killed-{algorithm}", **kwargs)
    monkeypatch.setattr(sync_worker, "channel_space", killing_first_space(sync_worker.channel_space, at))
    store, job_id = train_with_worker_1_killed(config)
    np.testing.assert_array_equal(store.get_weights(job_id)[0], whole_store.get_weights(whole)[0])
    assert store.get_record(job_id, "result")["state"] == "done"
    assert store.worker_record(job_id, 1)["invocations"] == 2


def test_lr_on_rcv1_like_trains_on_csr_shards():
    config = config_of("rcv1", dataset="rcv1-like", train_samples=600, validation_samples=100, batch_size=50)
    shard = data.load_shard("rcv1-like", "train", 0, 2, 600, holdout=100)
    assert shard.x.format == "csr"  # kept sparse
    store, job_id = train_job(config)
    result = store.get_record(job_id, "result")
    assert result["state"] == "done" and result["final_validation_accuracy"] is not None
    assert store.get_weights(job_id)[0].size == data.tabular.GENERATED["rcv1-like"] + 1
    assert np.any(store.get_weights(job_id)[0] != 0)
    # two epochs of 600 rows learn nothing the test rows show: the result says so (the last worker's test rows)
    test = data.load_shard("rcv1-like", "test", 0, 1, config.test_samples, scaled=True, after=config.train_samples)
    assert result["majority_class_rate"] == pytest.approx(np.bincount(test.y).max() / len(test.y))
    assert result["final_test_accuracy"] == pytest.approx(result["majority_class_rate"])
    assert result["guesses_one_class"] is True and "learning_rate 0.5 " in result["warning"]


def test_lr_on_higgs_like_learns():
    store, job_id = train_job(config_of("higgs", train_samples=2000, validation_samples=400, max_epochs=3,
                                        batch_size=32))
    result = store.get_record(job_id, "result")
    assert result["final_validation_accuracy"] > 0.62  # a linear model tops near 0.70
    assert result["guesses_one_class"] is False and result["warning"] is None


@pytest.mark.parametrize("body, field", [
    ({"algorithm": "gossip"}, "algorithm"),
    ({"algorithm": "grad_avg", "sync": "async"}, "sync"),
    ({"sync": "reduce"}, "sync"),
    ({"channel": "s3"}, "channel"),
    ({"algorithm": "admm"}, "model"),
    ({"model": "lr"}, "model"),
    ({"algorithm": "grad_avg", "dataset": "higgs-like"}, "dataset"),
    ({"algorithm": "grad_avg", "model": "svm"}, "model"),
    ({"algorithm": "grad_avg", "invocation_mode": "single"}, "invocation_mode"),
    ({"local_steps": 0}, "local_steps"),
    ({"round_timeout_s": 0}, "round_timeout_s"),
    ({"admm_rho": -1}, "admm_rho"),
    ({"channel": "dynamodb"}, "channel"),
    ({"dataset": "libsvm:"}, "dataset"),
])
def test_bad_combinations_name_the_field(body, field):
    with pytest.raises(ConfigError) as info:
        load_config({}, body)
    assert info.value.field == field


def test_the_sync_default_is_the_algorithms_own():
    from faasgd.config import sync_pattern

    assert sync_pattern(load_config({}, {})) == "async"
    assert sync_pattern(load_config({}, {"algorithm": "model_avg"})) == "reduce"


def test_admm_with_whole_shard_minibatches_equals_the_in_process_reference():
    config = config_of("admm-ref", algorithm="admm", batch_size=10_000, max_epochs=12, local_steps=3,
                       admm_rho=0.5, learning_rate=0.5)
    store, job_id = train_job(config)
    _, held = job.holdout(config)
    shards = [data.load_shard(config.dataset, "train", w, 2, config.train_samples, holdout=held) for w in range(2)]
    z = convex.admm.run_admm([(s.x, s.y) for s in shards], convex.lr, rho=0.5, rounds=12, local_steps=3, lr=0.5)
    assert store.worker_record(job_id, 0)["rounds"] == 12  # one round an epoch: the whole shard is one minibatch
    np.testing.assert_allclose(store.get_weights(job_id)[0], z, rtol=1e-4, atol=1e-5)


def test_a_worker_waiting_at_a_barrier_heartbeats_and_stops_when_the_job_fails():
    config = config_of("barrier-fail", round_timeout_s=30)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    beats = []
    call = Call(config, store, job_id, 0, "alone", on_heartbeat=lambda: beats.append(1))
    trainer = invocation.start(call, invocation.resume(call), sync_worker.load_sync_worker)
    start = trainer._last_heartbeat  # the fake clock goes on from the real one the first heartbeat read
    clock = [start]
    trainer.clock = lambda: clock[0]
    trainer.exchange.clock = trainer.clock

    def sleep(seconds):  # worker 1 never comes; after 5 s of waiting the job fails
        clock[0] += max(seconds, 0.5)
        if clock[0] > start + 5 and store.get_record(job_id, "result") is None:
            ending.write_result(store, job_id, error="worker 1: gone")

    trainer.sleep = sleep
    assert invocation.train(trainer) is True  # stopped: the job ended, long before the round's 30 s deadline
    assert clock[0] < start + 10 and len(beats) >= 5  # it stayed alive while it waited


def test_a_call_handed_off_mid_epoch_is_resumed_by_the_next_to_the_same_bits():
    whole_store, whole = train_job(config_of("handoff-whole", sync="reduce_scatter"))
    config = config_of("handoff", sync="reduce_scatter")
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    answers, chained = [], []

    def worker(w):
        if w == 0:
            invocation.run_worker(Call(config, store, job_id, 0), make=load_sync_worker)
            return
        asked = iter(range(10**6))
        budget = CallBudget(draining=lambda: next(asked) >= 4)  # SIGTERM after a few rounds
        answers.append(invocation.run_loop_call(Call(config, store, job_id, 1, "first", loader=data.load_shard, budget=budget, chain=chained.append), make=load_sync_worker))
        answers.append(invocation.run_loop_call(Call(config, store, job_id, 1, "second", loader=data.load_shard), make=load_sync_worker))

    in_threads(worker, 2)
    assert answers[0]["handed_off"] and chained == [0] and 0 < store.worker_record(job_id, 1)["invocations"] == 2
    np.testing.assert_array_equal(store.get_weights(job_id)[0], whole_store.get_weights(whole)[0])
    assert store.get_record(job_id, "result")["state"] == "done"


def test_kmeans_through_the_worker_is_lloyd_over_every_shard_and_its_model_assigns_the_nearest_centroid():
    config = config_of("kmeans", dataset="blobs-like", model="kmeans", algorithm="model_avg", n_clusters=8,
                       train_samples=900, validation_samples=100, number_of_workers=3, max_epochs=4)
    store, job_id = train_job(config)
    _, held = job.holdout(config)
    validation = data.load_shard(config.dataset, "validation", 0, 1, config.train_samples, holdout=held)
    rows = data.load_shard(config.dataset, "train", 0, 1, config.train_samples, holdout=held)
    centroids = convex.kmeans.init(validation.x, 8, np.random.default_rng(config.seed))
    for _ in range(4):  # the oracle: Lloyd over all the training rows in one process
        centroids = convex.kmeans.merge([convex.kmeans.partial(centroids, rows.x)], centroids)
    record = store.worker_record(job_id, 0)
    state = np.frombuffer(store.get_blob(job_id, keys.sync_state_name(0, record["rounds"])), "<f4",
                          offset=sync_checkpoint._HEADER.size)
    assert record["rounds"] == 4  # one Lloyd iteration an epoch
    np.testing.assert_allclose(state, centroids, rtol=1e-5, atol=1e-5)
    weights = store.get_weights(job_id)[0]
    nearest, _ = convex.kmeans.assign(centroids.reshape(8, -1), rows.x.astype(np.float64))
    assert np.mean(convex.linear.scores(weights, rows.x).argmax(axis=1) == nearest) > 0.999
    clusters, _ = convex.kmeans.assign(centroids.reshape(8, -1), validation.x.astype(np.float64))
    majority = {c: np.bincount(validation.y[clusters == c]).argmax() for c in set(clusters.tolist())}
    expected = np.mean([majority[c] == y for c, y in zip(clusters, validation.y)])  # clusters named by majority
    assert store.get_record(job_id, "result")["final_validation_accuracy"] == pytest.approx(expected, abs=0.011)
    assert expected > 0.5  # 8 blobs: chance is 1/8


@pytest.mark.parametrize("body, field", [
    ({"model": "kmeans", "algorithm": "grad_avg"}, "algorithm"),
    ({"model": "kmeans"}, "model"),
    ({"model": "svm", "algorithm": "grad_avg", "dataset": "blobs-like"}, "model"),
    ({"n_clusters": -1}, "n_clusters"),
])
def test_bad_kmeans_combinations_name_the_field(body, field):
    with pytest.raises(ConfigError) as info:
        load_config({}, body)
    assert info.value.field == field


def test_a_linear_jobs_model_file_reads_back_and_evaluate_says_where_its_accuracies_are():
    from faasgd.job import model_file

    store, job_id = train_job(config_of("model-file"))
    found = model_file.from_npz(model_file.to_npz(model_file.read_model(store, job_id)))
    assert found.dataset == "higgs-like" and found.sizes == (28, 1) and found.source == "final"
    np.testing.assert_array_equal(found.params, store.get_weights(job_id)[0])
    with pytest.raises(ConfigError) as info:
        model_file.evaluate_file(found)
    assert info.value.field == "dataset"


def test_one_worker_a_round_evaluates_the_test_rows_every_worker_at_the_last_epoch():
    config = config_of("sync-test-rows", number_of_workers=3, max_epochs=4)
    store, job_id = train_job(config)
    epochs = [e for e in store.events(job_id) if e["event"] == "epoch"]
    assert len(epochs) == 3 * 4
    reported = sorted((e["epoch"], e["worker_id"]) for e in epochs if e["test_accuracy"] is not None)
    assert reported == sorted([(e, (e - 1) % 3) for e in range(1, 4)] + [(4, w) for w in range(3)])
    result = job.read_status(store, job_id)["result"]
    assert result["final_test_accuracy"] == next(e["test_accuracy"] for e in epochs if e["epoch"] == 4)


def test_a_crossing_on_a_worker_that_did_not_evaluate_the_test_rows_evaluates_them_for_the_model(monkeypatch):
    claims = {}  # worker -> the test accuracy its crossing hands to keep_crossing
    original = sync_worker.model_file.keep_crossing

    def recording(store, job_id, worker_id, weights, test_accuracy, crossing):
        claims[worker_id] = test_accuracy()
        return original(store, job_id, worker_id, weights, test_accuracy, crossing)

    monkeypatch.setattr(sync_worker.model_file, "keep_crossing", recording)
    config = config_of("sync-crossing-test", number_of_workers=2, max_epochs=6, target_accuracy=0.05)
    store, job_id = train_job(config)
    epochs = {(e["epoch"], e["worker_id"]): e for e in store.events(job_id) if e["event"] == "epoch"}
    assert epochs[(1, 1)]["test_accuracy"] is None  # worker 1 did not evaluate the test rows at epoch 1
    # both crossed at epoch 1 on the same parameters: worker 1 evaluated them for its claim, to worker 0's figure
    assert claims == {0: epochs[(1, 0)]["test_accuracy"], 1: epochs[(1, 0)]["test_accuracy"]}
    assert job.read_status(store, job_id)["done"]["test_accuracy"] == epochs[(1, 0)]["test_accuracy"]

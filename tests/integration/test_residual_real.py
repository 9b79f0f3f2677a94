"""The error-feedback residual through real stores: a topk worker cut into calls (hand-offs) on a real
redis-server and memcached ends with the weights and final residual of one uninterrupted run on the memory
store, bit for bit; the residual blob the record names is the only one left (downpour/residual.py)."""

import uuid

import numpy as np
import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.functions.workloads import run_loop_call, run_worker
from faasgd.worker.invocation import Call
from faasgd.worker.budget import CallBudget
from faasgd.store import open_store

pytestmark = pytest.mark.integration


def start(store_url):
    config = load_config({}, {"dataset": "synthetic", "train_samples": 1200, "test_samples": 200, "hidden_sizes": [16],
                              "batch_size": 40, "update_rule": "sum", "number_of_workers": 1, "n_fetch": 1,
                              "n_push": 3, "max_epochs": 3, "target_accuracy": 1.0, "store_url": store_url,
                              "lease_s": 5, "push_codec": "topk:0.01", "communication": "blocking"})
    store = open_store(config.store_url)
    return config, store, job.create_job(store, config)


def residual_of(store, job_id, length):
    name = store.worker_record(job_id, 0).get("residual")
    return name, np.frombuffer(store.get_blob(job_id, name), "<f4") if name else np.zeros(length, np.float32)


@pytest.mark.parametrize("server", ["redis_server", "memcached_server"])
def test_a_handed_off_topk_worker_on_a_real_store_ends_as_one_uninterrupted_run(server, request):
    config, memory, memory_job = start(f"memory://res{uuid.uuid4().hex[:8]}")
    run_worker(Call(config, memory, memory_job, 0))
    expected = memory.get_weights(memory_job)[0]
    _, expected_residual = residual_of(memory, memory_job, expected.size)
    assert np.count_nonzero(expected_residual) > 0  # something is held back at the end: the check is not vacuous

    config, store, job_id = start(request.getfixturevalue(server).url)
    calls, done = 0, False
    while not done:  # each call hands off after 10 more pushes; the next one resumes from the record
        budget = CallBudget(draining=lambda: store.get_weights(job_id)[1] >= 10 * (calls + 1))
        answer = run_loop_call(Call(config, store, job_id, 0, f"call-{calls}", loader=load_shard, budget=budget, chain=lambda i: None))
        calls, done = calls + 1, answer["next_iteration"] is None
    record = store.worker_record(job_id, 0)
    assert calls >= 3 and record["state"] == "finished" and record["residual_resets"] == 0
    np.testing.assert_array_equal(store.get_weights(job_id)[0], expected)
    name, residual = residual_of(store, job_id, expected.size)
    np.testing.assert_array_equal(residual, expected_residual)
    assert name and store.get_blob(job_id, name) is not None

"""Background communication with two concurrent workers on a real redis-server and memcached.

Each applied push's update is kept (by the version it produced, support/push_recording.py); at the end the job's version is the
sum of the workers' pushes and its parameters are the initial ones plus every applied update, and
the steps the store says its weights hold are every step the workers pushed.
"""

from __future__ import annotations


import numpy as np
import pytest

from faasgd.config import load_config
from faasgd.store import open_store
from support.push_recording import RecordingStore, run_two_workers

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("communication", ["background", "coalesce"])
@pytest.mark.parametrize("backend", ["redis", "memcached"])
def test_two_background_workers_keep_the_exact_sum(backend, communication, redis_server, memcached_server):
    server = redis_server if backend == "redis" else memcached_server
    config = load_config({}, {
        "dataset": "synthetic", "train_samples": 2000, "validation_samples": 200, "test_samples": 300, "hidden_sizes": [16], "batch_size": 20,
        "number_of_workers": 2, "n_fetch": 1, "n_push": 2, "max_epochs": 3, "target_accuracy": 1.0,
        "store_url": server.url, "communication": communication, "update_rule": "average"})
    with open_store(server.url, timeout_s=5.0) as inner:
        store = RecordingStore(inner)
        job_id, init, finals = run_two_workers(config, store, timeout_s=120)
        assert all(f is not None and f["state"] == "finished" for f in finals), finals
        weights, version = store.get_weights(job_id)
        assert version == sum(f["pushes"] for f in finals) == len(store.applied)
        every_push = {(w, seq) for w in (0, 1) for seq in range(1, finals[w]["pushes"] + 1)}
        assert {(p.worker, p.seq) for p in store.applied} == every_push
        updates = sorted((store.applied[p] for p in store.applied), key=lambda u: u[0])
        replayed = np.array(init, np.float32)
        for _, delta in updates:  # the job's rule, average: each push moves the weights delta / 2
            replayed = replayed + delta / np.float32(2)
        if backend == "redis":  # one transaction per push: added in the order of the versions they report
            assert [v for v, _ in updates] == list(range(1, version + 1))
            np.testing.assert_array_equal(weights, replayed)
        np.testing.assert_allclose(weights, replayed, atol=1e-5)  # memcached: each chunk adds in its own order
        assert store.fetch(job_id).steps == sum(f["step"] for f in finals) == 3 * 1800 // 20  # 200 rows held out
        assert all(f["comm_wait_s"] > 0 and f["staleness_hist"] for f in finals)
        assert store.get_record(job_id, "result")["staleness_p99"] >= 0

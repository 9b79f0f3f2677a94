"""ADMM and KMeans rounds over a real redis-server (the session's fixture) give the in-memory bits."""

from __future__ import annotations

import numpy as np
import pytest

from support.rounds_drive import exchanges, in_threads, memory_url, new_job, values
from faasgd.lambdaml.convex import admm, kmeans, lr
from faasgd.data.generated import blobs, rcv1_like
from faasgd.lambdaml.rounds import RoundState, admm_round, admm_state, kmeans_round

pytestmark = pytest.mark.integration


def run(url, pattern, algorithm, shards, start, rounds=3):
    ex = exchanges(url, new_job(), len(shards), pattern, op="mean" if algorithm == "admm" else "sum")

    def work(w):
        state = start
        for _ in range(rounds):
            if algorithm == "admm":
                state = admm_round(state, shards[w], lr, ex[w], admm.AdmmSettings(0.1, 3, 1.0, 1e-3)).state
            else:
                state = kmeans_round(state, shards[w], ex[w]).state
        return state.params
    return values(in_threads(len(shards), work))


@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
def test_admm_on_sparse_data_and_kmeans_on_redis_match_memory_bit_for_bit(redis_server, pattern):
    X, y = rcv1_like(1500, seed=3, n_features=5000, density=0.01)  # CSR end to end; 5001-float vectors
    sparse = [(X[rows], y[rows]) for rows in np.array_split(np.arange(1500), 3)]
    P, _ = blobs(1500, seed=4, k=5, d=8)
    points = [(P[rows], None) for rows in np.array_split(np.arange(1500), 3)]
    centroids = RoundState(kmeans.init(P, 5, np.random.default_rng(0)))
    for algorithm, shards, start in (("admm", sparse, admm_state(5000)), ("kmeans", points, centroids)):
        real, memory = (run(url, pattern, algorithm, shards, start) for url in (redis_server.url, memory_url()))
        assert all(a.tobytes() == b.tobytes() for a, b in zip(real, memory)), algorithm
        assert np.abs(real[0] - start.params).max() > 1e-3  # the rounds moved the model

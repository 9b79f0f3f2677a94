"""Distributed KMeans: per-shard partials merged each round are Lloyd's algorithm (scikit-learn's oracle)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans

from faasgd.lambdaml.convex import kmeans
from faasgd.data.generated import blobs, rcv1_like
from faasgd.errors import ConfigError


def lloyd_over_shards(centroids, X, n_shards, iterations):
    shards = np.array_split(np.arange(X.shape[0]), n_shards)
    for _ in range(iterations):
        blobs_sent = [kmeans.pack(kmeans.partial(centroids, X[rows])) for rows in shards]  # as they travel
        k, d = kmeans.as_centroids(centroids, X.shape[1]).shape
        centroids = kmeans.merge([kmeans.unpack(b, k, d) for b in blobs_sent], centroids)
    return centroids


@pytest.mark.parametrize("iterations", [1, 3, 8])
def test_three_shards_match_sklearn_lloyd_inertia_from_the_same_centroids(iterations):
    X, _ = blobs(3000, seed=7, k=6, d=5)
    init = kmeans.init(X, 6, np.random.default_rng(1))  # flat float32, as stores move it
    ours = lloyd_over_shards(init, X, 3, iterations)
    assert ours.dtype == np.float32 and ours.shape == (30,)
    oracle = KMeans(6, init=init.reshape(6, 5).astype(np.float64), n_init=1, max_iter=iterations,
                    algorithm="lloyd", tol=0).fit(X.astype(np.float64))
    assert kmeans.inertia(ours, X) == pytest.approx(oracle.inertia_, rel=1e-6)
    np.testing.assert_allclose(ours.reshape(6, 5), oracle.cluster_centers_, rtol=1e-6, atol=1e-6)
    if iterations == 1:  # the oracle must be able to tell: one iteration is not yet converged
        assert kmeans.inertia(lloyd_over_shards(init, X, 3, 8), X) < 0.999 * oracle.inertia_


def test_the_shards_inertias_add_up_to_the_whole_one_and_sharding_changes_nothing():
    X, _ = blobs(1000, seed=2, k=4, d=3)
    C = kmeans.init(X, 4, np.random.default_rng(0))
    parts = [kmeans.partial(C, X[rows]) for rows in np.array_split(np.arange(1000), 4)]
    whole = kmeans.partial(C, X)
    assert sum(p.inertia for p in parts) == pytest.approx(whole.inertia, rel=1e-12)
    assert sum(p.counts.sum() for p in parts) == 1000
    np.testing.assert_allclose(kmeans.merge(parts, C), kmeans.merge([whole], C), rtol=1e-6)


def test_a_centroid_no_row_chose_stays_where_it_was():
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0]])
    C = np.array([[0.0, 0.5], [10.0, 10.0], [100.0, -100.0]], dtype=np.float32)
    new = kmeans.merge([kmeans.partial(C, X)], C)
    np.testing.assert_array_equal(new, [[0.0, 0.5], [10.0, 10.0], [100.0, -100.0]])
    moved = kmeans.merge([kmeans.partial(C, X[:2] + 1)], C)
    np.testing.assert_array_equal(moved[0], [1.0, 1.5])
    np.testing.assert_array_equal(moved[1:], C[1:])


def test_csr_input_gives_the_dense_partial_without_densifying(monkeypatch):
    X, _ = rcv1_like(500, seed=1, n_features=400, density=0.05)
    C = kmeans.init(X, 5, np.random.default_rng(3))
    dense = kmeans.partial(C, X.toarray())
    toarray = sp.csr_matrix.toarray

    def only_small(self, *args, **kwargs):  # the (k, d) sums may become dense, never the rows
        assert self.shape[0] != X.shape[0], "X was densified"
        return toarray(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", only_small)
    sparse = kmeans.partial(C, X)
    np.testing.assert_allclose(sparse.sums, dense.sums, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(sparse.counts, dense.counts)
    assert sparse.inertia == pytest.approx(dense.inertia, rel=1e-9)


def test_a_partial_packs_into_one_float64_blob_and_back_exactly():
    X, _ = blobs(200, seed=3, k=3, d=4)
    p = kmeans.partial(kmeans.init(X, 3, np.random.default_rng(0)), X)
    blob = kmeans.pack(p)
    assert blob.dtype == np.float64 and blob.shape == (3 * 4 + 3 + 1,)
    back = kmeans.unpack(np.frombuffer(blob.tobytes()), 3, 4)
    np.testing.assert_array_equal(back.sums, p.sums)
    np.testing.assert_array_equal(back.counts, p.counts)
    assert back.inertia == p.inertia


@pytest.mark.parametrize("call,field", [
    (lambda: kmeans.partial(np.zeros(7, np.float32), np.zeros((4, 3))), "centroids"),  # 7 is not k * 3
    (lambda: kmeans.partial(np.zeros((2, 4), np.float32), np.zeros((4, 3))), "centroids"),
    (lambda: kmeans.init(np.zeros((4, 3)), 5, np.random.default_rng(0)), "k"),
    (lambda: kmeans.unpack(np.zeros(10), 2, 3), "partial"),
    (lambda: kmeans.merge([], np.zeros(6, np.float32)), "partials"),
    (lambda: kmeans.merge([kmeans.partial(np.zeros(6, np.float32), np.ones((2, 3)))], np.zeros(9, np.float32)),
     "centroids"),
    (lambda: kmeans.inertia(np.zeros(3, np.float32), "rows"), "X"),
])
def test_bad_inputs_raise_config_errors_naming_the_field(call, field):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field

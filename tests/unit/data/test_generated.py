"""Generated data sets: the same seed gives the same bytes, the shapes and density asked, any size."""

import hashlib

import numpy as np
import pytest
import scipy.sparse as sp

from faasgd.data.generated import BLOCK_ROWS, blob_centres, blobs, higgs_like, rcv1_like, train_test_split
from faasgd.errors import ConfigError


def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        if sp.issparse(a):
            h.update(a.data.tobytes() + a.indices.tobytes() + a.indptr.tobytes())
        else:
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("make", [
    lambda seed: higgs_like(500, seed),
    lambda seed: rcv1_like(300, seed, n_features=3000, density=0.01),
    lambda seed: blobs(400, seed, k=4, d=3),
])
def test_the_same_seed_gives_the_same_bytes_and_another_seed_others(make):
    assert digest(*make(1)) == digest(*make(1))
    assert digest(*make(1)) != digest(*make(2))


def test_higgs_like_shape_labels_and_rows_independent_of_n():
    X, y = higgs_like(BLOCK_ROWS + 10, seed=3)
    assert X.shape == (BLOCK_ROWS + 10, 28) and X.dtype == np.float32 and y.dtype == np.int64
    assert set(np.unique(y)) == {0, 1} and 0.48 < y.mean() < 0.58
    X_small, y_small = higgs_like(100, seed=3)
    np.testing.assert_array_equal(X_small, X[:100])  # a larger n extends a smaller one
    np.testing.assert_array_equal(y_small, y[:100])


def test_rcv1_like_is_csr_of_the_asked_width_and_density():
    X, y = rcv1_like(2000, seed=5)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float32 and X.shape == (2000, 47236)
    assert X.nnz / (2000 * 47236) == pytest.approx(0.0016, rel=0.05)
    assert X.has_canonical_format and (X.data > 0).all()
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A1, 1, rtol=1e-5)  # unit rows
    assert set(np.unique(y)) == {0, 1} and 0.3 < y.mean() < 0.7
    X_small, y_small = rcv1_like(BLOCK_ROWS + 5, seed=5)
    assert digest(X_small, y_small) == digest(X[:BLOCK_ROWS + 5], y[:BLOCK_ROWS + 5])
    other = rcv1_like(500, seed=5, n_features=10000, density=0.005)[0]
    assert other.shape == (500, 10000) and other.nnz / 5e6 == pytest.approx(0.005, rel=0.05)


def test_blobs_lie_around_their_centres():
    X, y = blobs(2000, seed=9, k=5, d=4)
    assert X.shape == (2000, 4) and X.dtype == np.float32 and set(np.unique(y)) == set(range(5))
    centres = blob_centres(9, 5, 4)
    for j in range(5):
        np.testing.assert_allclose(X[y == j].mean(axis=0), centres[j], atol=0.25)


def test_train_test_split_is_seeded_disjoint_and_keeps_csr():
    X, y = rcv1_like(100, seed=1, n_features=500, density=0.02)
    X_train, X_test, y_train, y_test = train_test_split(X, y, 0.3, seed=4)
    assert sp.isspmatrix_csr(X_train) and X_train.shape[0] == 70 and X_test.shape[0] == 30
    assert len(y_train) == 70 and len(y_test) == 30
    again = train_test_split(X, y, 0.3, seed=4)
    assert digest(X_test) == digest(again[1]) and digest(X_test) != digest(train_test_split(X, y, 0.3, seed=5)[1])
    rows = np.sort(np.concatenate([X_train.toarray(), X_test.toarray()]), axis=0)
    np.testing.assert_array_equal(rows, np.sort(X.toarray(), axis=0))


@pytest.mark.parametrize("call,field", [
    (lambda: higgs_like(0, 1), "n"),
    (lambda: higgs_like(10, -1), "seed"),
    (lambda: rcv1_like(10, 1, n_features=0), "n_features"),
    (lambda: rcv1_like(10, 1, n_features=100, density=0.001), "density"),
    (lambda: blobs(10, 1, k=0, d=2), "k"),
    (lambda: blobs(10, 1, k=2, d=1.5), "d"),
    (lambda: train_test_split(np.zeros((10, 2)), np.zeros(10), 1.0), "test_fraction"),
    (lambda: train_test_split(np.zeros((10, 2)), np.zeros(9), 0.2), "y"),
])
def test_bad_arguments_raise_config_errors_naming_the_field(call, field):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field

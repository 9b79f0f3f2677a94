"""The tabular data sets behind lr and svm: generated (higgs-like, rcv1-like) and libsvm:PATH files, as shards."""

import numpy as np
import pytest
import scipy.sparse as sp

from faasgd import data
from faasgd.data import generated, tabular
from faasgd.data.libsvm import write_libsvm
from faasgd.errors import ConfigError, DataMissing


def test_generated_training_rows_are_a_prefix_and_the_test_rows_follow_them():
    train = data.load_shard("higgs-like", "train", 0, 1, 500)
    X, y = generated.higgs_like(700, tabular.GENERATED_SEED)
    np.testing.assert_array_equal(train.x, X[:500])
    test = data.load_shard("higgs-like", "test", 0, 1, 200, after=500)
    np.testing.assert_array_equal(test.x, X[500:700])
    np.testing.assert_array_equal(test.y, y[500:700])
    assert data.count_rows("higgs-like", "train") == tabular.DEFAULT_TRAIN_ROWS
    assert data.dataset_info("rcv1-like") == (generated.RCV1_FEATURES, 2)


def test_shards_of_a_sparse_set_stay_csr_and_cover_the_rows_once():
    parts = [data.load_shard("rcv1-like", "train", w, 3, 400, holdout=40) for w in range(3)]
    held = data.load_shard("rcv1-like", "validation", 0, 1, 400, holdout=40)
    assert all(sp.issparse(p.x) and p.x.format == "csr" and p.x.dtype == np.float32 for p in parts + [held])
    X, _ = generated.rcv1_like(400, tabular.GENERATED_SEED)
    joined = sp.vstack([p.x for p in parts] + [held.x]).toarray()
    np.testing.assert_array_equal(joined, X.toarray())


@pytest.fixture
def libsvm_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(tabular.LIBSVM_DIR_ENV, str(tmp_path))
    return tmp_path


def test_a_libsvm_file_without_a_test_file_gives_its_last_fifth_as_test_rows(libsvm_dir):
    rng = np.random.default_rng(0)
    X = sp.random(50, 12, density=0.3, format="csr", random_state=1, dtype=np.float32)
    y = rng.integers(0, 2, 50) * 2 - 1
    write_libsvm(libsvm_dir / "small.svm", X, y)
    assert data.dataset_info("libsvm:small.svm") == (12, 2)
    assert data.count_rows("libsvm:small.svm", "train") == 40 and data.count_rows("libsvm:small.svm", "test") == 10
    test = data.load_shard("libsvm:small.svm", "test", 0, 1)
    assert test.x.format == "csr"
    np.testing.assert_allclose(test.x.toarray(), X[40:].toarray(), rtol=1e-6)
    np.testing.assert_array_equal(test.y, (y[40:] + 1) // 2)


def test_a_libsvm_test_file_beside_it_is_the_test_split(libsvm_dir):
    (libsvm_dir / "sets").mkdir()
    write_libsvm(libsvm_dir / "sets/a.svm", np.eye(4, dtype=np.float32), np.array([1, 2, 3, 1]))
    test_rows = np.zeros((2, 6), np.float32)
    test_rows[0, 5] = test_rows[1, 1] = 1.0
    write_libsvm(libsvm_dir / "sets/a.svm.t", test_rows, np.array([3, 2]))
    assert data.dataset_info("libsvm:sets/a.svm") == (6, 3)  # the wider of the two; classes of the training file
    assert data.count_rows("libsvm:sets/a.svm", "train") == 4
    np.testing.assert_array_equal(data.load_shard("libsvm:sets/a.svm", "test", 0, 1).y, [2, 1])


@pytest.mark.parametrize("name", ["libsvm:", "libsvm:/etc/passwd", "libsvm:../secrets/x", "libsvm:a/./b",
                                  "libsvm:a b", "libsvm:a//b"])
def test_a_libsvm_path_outside_the_folder_is_refused_naming_dataset(name):
    with pytest.raises(ConfigError) as info:
        data.dataset_info(name)
    assert info.value.field == "dataset"


def test_a_missing_libsvm_file_is_409_and_a_malformed_one_400(libsvm_dir):
    with pytest.raises(DataMissing):
        data.dataset_info("libsvm:nothing.svm")
    (libsvm_dir / "bad.svm").write_text("1 0:1\n")
    with pytest.raises(ConfigError) as info:
        data.dataset_info("libsvm:bad.svm")
    assert info.value.field == "dataset"

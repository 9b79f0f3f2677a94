"""Our libsvm reader equals scikit-learn's load_svmlight_file, and names the line of what it refuses."""

import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from faasgd.data.generated import rcv1_like
from faasgd.data.libsvm import read_libsvm, write_libsvm
from faasgd.errors import ConfigError, DataError

SAMPLE = """# a header comment
-1 1:0.5 3:-2 7:1e-3
+1 2:1.25   5:4 # a trailing comment

1 1:1 7:2.5
-1 4:-0.75
"""


def write(tmp_path, text, name="data.libsvm"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_sample_equals_sklearns_with_labels_mapped_to_0_1(tmp_path):
    path = write(tmp_path, SAMPLE)
    X, y, classes = read_libsvm(path)
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=False)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float32 and X.shape == X_ref.shape == (4, 7)
    np.testing.assert_allclose(X.toarray(), X_ref.toarray(), rtol=1e-7)
    np.testing.assert_array_equal(y, (y_ref + 1) // 2)
    assert classes == (-1, 1) and y.tolist() == [0, 1, 1, 0]


def test_a_generated_sparse_file_and_its_dense_form_equal_sklearns(tmp_path):
    X, y = rcv1_like(300, seed=4, n_features=2000, density=0.01)
    path = tmp_path / "rcv1.libsvm"
    write_libsvm(path, X, 2 * y - 1)  # libsvm's -1/+1
    X_ref, y_ref = load_svmlight_file(str(path), n_features=2000, zero_based=False)
    ours = read_libsvm(path, n_features=2000)
    np.testing.assert_array_equal(ours.X.toarray(), X_ref.toarray().astype(np.float32))
    np.testing.assert_array_equal(ours.X.toarray(), X.toarray())  # the round trip is exact
    np.testing.assert_array_equal(ours.y, y)
    dense = read_libsvm(path, n_features=2000, dense=True)
    assert isinstance(dense.X, np.ndarray) and dense.X.dtype == np.float32
    np.testing.assert_array_equal(dense.X, X_ref.toarray().astype(np.float32))


def test_multiclass_labels_map_to_0_to_c_minus_1_and_a_test_file_reuses_the_train_mapping(tmp_path):
    train = write(tmp_path, "1 1:1\n3 2:1\n2 1:2\n3 3:1\n", "train")
    test = write(tmp_path, "3 1:1\n2 2:2\n", "test")  # class 1 absent: still labels 2 and 1
    X, y, classes = read_libsvm(train)
    _, y_ref = load_svmlight_file(str(train), zero_based=False)
    assert classes == (1, 2, 3)
    np.testing.assert_array_equal(y, y_ref - 1)
    assert read_libsvm(test, classes=classes).y.tolist() == [2, 1]
    assert read_libsvm(test).y.tolist() == [1, 0]  # on its own, a file maps its own labels
    with pytest.raises(DataError, match="line 1: label 3 is not one of the classes"):
        read_libsvm(test, classes=(1, 2))


def test_0_1_labels_stay_and_a_single_class_file_keeps_its_meaning(tmp_path):
    assert read_libsvm(write(tmp_path, "0 1:1\n1 2:1\n")).y.tolist() == [0, 1]
    assert read_libsvm(write(tmp_path, "+1 1:1\n1 2:1\n")).y.tolist() == [1, 1]


def test_gzip_files_are_read(tmp_path):
    path = tmp_path / "data.libsvm.gz"
    with gzip.open(path, "wt") as out:
        out.write(SAMPLE)
    assert read_libsvm(path).X.nnz == read_libsvm(write(tmp_path, SAMPLE)).X.nnz == 8


@pytest.mark.parametrize("line,says", [
    ("1 qid:3 1:0.5", "qid"),
    ("1 0:0.5", "1-based"),
    ("1 3:1 2:1", "must increase"),
    ("1 2:1 2:1", "must increase"),
    ("1 1:abc", "value of index 1 'abc' is not a number"),
    ("1 1:nan", "not finite"),
    ("one 1:1", "label 'one' is not a number"),
    ("1.5 1:1", "not a whole number"),
    ("1 1=1", "is not INDEX:VALUE"),
    ("1 x:1", "index 'x' is not a positive integer"),
])
def test_a_bad_line_raises_a_data_error_naming_its_line_number(tmp_path, line, says):
    path = write(tmp_path, f"# header\n1 1:1\n\n{line}\n-1 2:1\n")
    with pytest.raises(DataError, match=f"line 4: .*{says}"):
        read_libsvm(path)


def test_missing_empty_and_too_wide_files_and_bad_arguments(tmp_path):
    with pytest.raises(DataError, match="no such libsvm file"):
        read_libsvm(tmp_path / "absent")
    with pytest.raises(DataError, match="no rows"):
        read_libsvm(write(tmp_path, "# only a comment\n\n"))
    with pytest.raises(DataError, match="line 2: index 7 exceeds n_features 5"):
        read_libsvm(write(tmp_path, "1 1:1\n-1 7:1\n"), n_features=5)
    with pytest.raises(ConfigError) as e:
        read_libsvm(write(tmp_path, "1 1:1\n"), n_features=0)
    assert e.value.field == "n_features"

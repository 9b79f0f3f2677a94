"""Data sets and shards: IDX row ranges, sharding, fashion-mnist, emnist against the package, synthetic."""

import gzip
import os
import tracemalloc
import zipfile

import emnist
import numpy as np
import pytest

from faasgd.data import DATASETS, dataset_info, fashion, load_shard, shard_range
from faasgd.data.idx import count_idx, load_idx
from faasgd.errors import ConfigError, DataError, DataMissing

REAL_FASHION = "/usr/share/datasets/fashion-mnist"
IDX_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(">i2"): 0x0B,
             np.dtype(">i4"): 0x0C, np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}


def idx_bytes(array: np.ndarray) -> bytes:
    """Encode `array` (already in a big-endian or single-byte dtype) as an IDX file."""
    header = bytes([0, 0, IDX_CODES[array.dtype], array.ndim]) + np.array(array.shape, ">u4").tobytes()
    return header + array.tobytes()


def write_idx(path, array, compress):
    data = idx_bytes(array)
    with open(path, "wb") as f:
        f.write(gzip.compress(data, compresslevel=1) if compress else data)
    return str(path)


def write_fashion(directory, n_train, n_test, compress=True, seed=0):
    """Write a small fashion-mnist IDX set; return {split: (images, labels)}."""
    rng = np.random.default_rng(seed)
    suffix = ".gz" if compress else ""
    written = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        write_idx(directory / f"{prefix}-images-idx3-ubyte{suffix}", images, compress)
        write_idx(directory / f"{prefix}-labels-idx1-ubyte{suffix}", labels, compress)
        written[split] = images, labels
    return written


def as_rows(images):
    return images.reshape(len(images), -1).astype(np.float32) / 255


@pytest.fixture
def fashion_dir(tmp_path, monkeypatch):
    written = write_fashion(tmp_path, n_train=53, n_test=17)
    monkeypatch.setenv("FAASGD_DATA_DIR", str(tmp_path))
    return tmp_path, written


# --- IDX -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, ">i2", ">f4"])
def test_idx_row_ranges_equal_slices(tmp_path, compress, dtype):
    full = (np.random.default_rng(0).random((11, 3, 4)) * 100).astype(dtype)
    path = write_idx(tmp_path / "a.idx", full, compress)
    assert count_idx(path) == 11
    np.testing.assert_array_equal(load_idx(path), full)
    for start, stop in [(0, 0), (0, 1), (3, 8), (10, 11), (11, 11)]:
        rows = load_idx(path, start, stop)
        assert rows.shape == (stop - start, 3, 4) and rows.dtype.isnative
        np.testing.assert_array_equal(rows, full[start:stop])


def test_idx_rejects_bad_files_and_ranges(tmp_path):
    path = write_idx(tmp_path / "a.idx.gz", np.zeros(5, np.uint8), compress=True)
    with pytest.raises(DataError, match="outside"):
        load_idx(path, 2, 6)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(DataError, match="not an IDX"):
        load_idx(str(tmp_path / "bad"))
    (tmp_path / "short.gz").write_bytes(gzip.compress(idx_bytes(np.zeros(5, np.uint8))[:-2]))
    with pytest.raises(DataError, match="truncated"):
        load_idx(str(tmp_path / "short.gz"))
    with pytest.raises(DataError, match="cannot open"):
        load_idx(str(tmp_path / "missing"))


# --- sharding ---------------------------------------------------------------------------------------

def test_shard_range_is_contiguous_floor_split():
    for total in (0, 1, 7, 10, 60000):
        for n in (1, 2, 3, 7):
            ranges = [shard_range(total, i, n) for i in range(n)]
            assert ranges[0][0] == 0 and ranges[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            assert ranges == [(i * total // n, (i + 1) * total // n) for i in range(n)]


def test_shard_range_rejects_bad_workers():
    with pytest.raises(ConfigError) as err:
        shard_range(10, 3, 3)
    assert err.value.field == "worker_id"
    with pytest.raises(ConfigError) as err:
        shard_range(10, 0, 0)
    assert err.value.field == "number_of_workers"


def test_dataset_info_without_data():
    assert dataset_info("fashion-mnist") == (784, 10)
    assert dataset_info("emnist-balanced") == (784, 47)
    assert dataset_info("emnist-byclass") == (784, 62)
    assert dataset_info("emnist-letters") == (784, 27)
    assert dataset_info("synthetic") == (784, 10)
    assert all(dataset_info(name)[0] == 784 for name in DATASETS)


# --- fashion-mnist ----------------------------------------------------------------------------------

@pytest.mark.parametrize("split", ["train", "test"])
def test_fashion_shards_concatenate_to_the_split(fashion_dir, split):
    _, written = fashion_dir
    images, labels = written[split]
    for n in (1, 2, 5):
        shards = [load_shard("fashion-mnist", split, i, n) for i in range(n)]
        assert all(s.total == len(labels) and s.n_classes == 10 and s.input_dim == 784 for s in shards)
        x = np.concatenate([s.x for s in shards])
        assert x.dtype == np.float32 and shards[0].y.dtype == np.int64
        np.testing.assert_array_equal(x, as_rows(images))
        np.testing.assert_array_equal(np.concatenate([s.y for s in shards]), labels)


def test_fashion_limit_takes_the_first_rows_then_shards(fashion_dir):
    _, written = fashion_dir
    images, labels = written["train"]
    shard = load_shard("fashion-mnist", "train", worker_id=1, number_of_workers=2, limit=20)
    assert (shard.total, shard.start, shard.stop) == (20, 10, 20)
    np.testing.assert_array_equal(shard.x, as_rows(images[10:20]))
    assert load_shard("fashion-mnist", limit=1000).total == 53


def test_fashion_reads_plain_files_and_data_dir_beats_env(tmp_path, fashion_dir):
    plain = tmp_path / "plain"
    plain.mkdir()
    written = write_fashion(plain, n_train=9, n_test=4, compress=False, seed=7)
    assert fashion.count_rows("test", data_dir=str(plain)) == 4  # the environment names fashion_dir's files
    (_, labels), = fashion.iter_split_rows("test", 0, 4, data_dir=str(plain))
    np.testing.assert_array_equal(labels, written["test"][1])


def test_fashion_missing_dir_says_how_to_get_the_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FAASGD_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(DataMissing) as err:
        load_shard("fashion-mnist")
    assert err.value.http_status == 409 and err.value.dataset == "fashion-mnist"
    assert "get it with `apt-get install dataset-fashion-mnist`" in str(err.value)
    assert "FAASGD_DATA_DIR" in str(err.value) and "nowhere" in str(err.value)


def test_fashion_mismatched_files_raise_data_error(fashion_dir):
    directory, _ = fashion_dir
    write_idx(directory / "t10k-labels-idx1-ubyte.gz", np.zeros(5, np.uint8), compress=True)
    with pytest.raises(DataError, match="17 images but 5 labels"):
        load_shard("fashion-mnist", "test")


def test_memory_grows_with_the_shard_not_the_file(tmp_path, monkeypatch):
    images = np.zeros((4000, 28, 28), np.uint8)
    images[:, 5, 5] = 255
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", images, compress=True)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.ones(4000, np.uint8), compress=True)
    monkeypatch.setenv("FAASGD_DATA_DIR", str(tmp_path))
    tracemalloc.start()
    try:
        shard = load_shard("fashion-mnist", "train", worker_id=39, number_of_workers=40)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert shard.x.shape == (100, 784) and shard.x[:, 5 * 28 + 5].min() == 1.0
    whole = images.size * 4  # the split as float32: 12.5 MB
    assert peak < 1_000_000 < whole / 10, peak


@pytest.mark.skipif(not os.path.isdir(REAL_FASHION), reason="dataset-fashion-mnist is not installed")
def test_real_fashion_mnist_files(monkeypatch):
    monkeypatch.setenv("FAASGD_DATA_DIR", REAL_FASHION)
    for split, total in (("train", 60000), ("test", 10000)):
        shard = load_shard("fashion-mnist", split, worker_id=0, number_of_workers=total // 100)
        assert (shard.total, shard.x.shape) == (total, (100, 784))
        assert 0.0 <= shard.x.min() and shard.x.max() <= 1.0 and shard.x.max() > 0.9
        assert set(np.unique(shard.y)) <= set(range(10))
    half = load_shard("fashion-mnist", "train", 1, 2, limit=600)
    assert (half.total, half.start, half.stop, len(half.y)) == (600, 300, 600, 300)


# --- emnist -----------------------------------------------------------------------------------------

def parse_idx_numpy2(data):
    """The emnist package's parse_idx with its header read fixed for numpy >= 2.3 (int() of a 1-element array)."""
    data = bytes(data)
    dims = data[3]
    shape = tuple(int(np.frombuffer(data[4 * (d + 1):4 * (d + 2)], dtype=">u4")[0]) for d in range(dims))
    dtype = np.dtype(emnist.IDX_DATA_TYPE_CODES[data[2]]).newbyteorder(">")
    return np.frombuffer(data[4 * (dims + 1):], dtype=dtype).reshape(shape)


@pytest.fixture
def emnist_cache(tmp_path, monkeypatch):
    """Point the emnist package at a tiny archive in its own cache format (present: it never downloads)."""
    path = tmp_path / "emnist.zip"
    rng = np.random.default_rng(3)
    with zipfile.ZipFile(path, "w") as archive:
        for variant, classes, n_train, n_test in (("digits", 10, 23, 9), ("letters", 27, 12, 5)):
            for usage, n in (("train", n_train), ("test", n_test)):
                images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
                labels = rng.integers(1 if variant == "letters" else 0, classes, size=n, dtype=np.uint8)
                for matrix, dim, array in (("images", 3, images), ("labels", 1, labels)):
                    name = emnist.ZIP_PATH_TEMPLATE.format(dataset=variant, usage=usage, matrix=matrix, dim=dim)
                    archive.writestr(name, gzip.compress(idx_bytes(array), compresslevel=1))
    monkeypatch.setattr(emnist, "CACHE_FILE_PATH", str(path))
    try:
        emnist.parse_idx(idx_bytes(np.zeros(1, np.uint8)))
    except TypeError:
        monkeypatch.setattr(emnist, "parse_idx", parse_idx_numpy2)
    return path


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("variant", ["digits", "letters"])
@pytest.mark.parametrize("split", ["train", "test"])
def test_emnist_shards_match_the_package_loader(emnist_cache, variant, split):
    loader = emnist.extract_training_samples if split == "train" else emnist.extract_test_samples
    images, labels = loader(variant)
    for n in (1, 2, 4):
        shards = [load_shard(f"emnist-{variant}", split, i, n) for i in range(n)]
        for shard in shards:
            assert shard.total == len(labels) and shard.n_classes == (27 if variant == "letters" else 10)
            np.testing.assert_array_equal(shard.x, as_rows(images[shard.start:shard.stop]))
            np.testing.assert_array_equal(shard.y, labels[shard.start:shard.stop])
        assert sum(len(s.y) for s in shards) == len(labels)


def test_emnist_archive_env_names_where_it_is(emnist_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("FAASGD_EMNIST_ARCHIVE", str(tmp_path / "elsewhere.zip"))
    with pytest.raises(DataMissing, match="elsewhere.zip"):
        load_shard("emnist-digits")
    os.rename(emnist_cache, tmp_path / "elsewhere.zip")
    assert load_shard("emnist-digits", "test").total == 9


def test_emnist_archive_without_the_variant(emnist_cache):
    with pytest.raises(DataError, match="no member gzip/emnist-byclass-train-images"):
        load_shard("emnist-byclass")


def test_emnist_corrupt_archive(emnist_cache):
    emnist_cache.write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not a readable zip.*faasgd data fetch emnist --force"):
        load_shard("emnist-digits")


# --- synthetic --------------------------------------------------------------------------------------

def test_synthetic_rows_do_not_depend_on_sharding_or_limit():
    whole = load_shard("synthetic", "train", limit=2500)
    assert whole.x.shape == (2500, 784) and whole.x.dtype == np.float32 and whole.y.dtype == np.int64
    assert 0.0 <= whole.x.min() and whole.x.max() <= 1.0
    for n in (2, 3, 7):
        shards = [load_shard("synthetic", "train", i, n, limit=2500) for i in range(n)]
        np.testing.assert_array_equal(np.concatenate([s.x for s in shards]), whole.x)
        np.testing.assert_array_equal(np.concatenate([s.y for s in shards]), whole.y)
    longer = load_shard("synthetic", "train", limit=3100)
    np.testing.assert_array_equal(longer.x[:2500], whole.x)
    assert not np.array_equal(load_shard("synthetic", "test", limit=50).x, whole.x[:50])


def test_synthetic_default_sizes_and_any_limit():
    assert load_shard("synthetic", "train", 599, 600).total == 60000
    assert load_shard("synthetic", "test", 99, 100).total == 10000
    assert load_shard("synthetic", "test", 0, 1000, limit=70000).stop == 70


def test_synthetic_is_learnable_from_class_means():
    train = load_shard("synthetic", "train", limit=3000)
    test = load_shard("synthetic", "test", limit=1000)
    means = np.stack([train.x[train.y == k].mean(axis=0) for k in range(10)])
    distances = ((test.x[:, None, :] - means[None]) ** 2).sum(axis=2)
    assert np.mean(distances.argmin(axis=1) == test.y) > 0.8
    assert np.bincount(train.y, minlength=10).min() > 200


def test_synthetic_memory_grows_with_the_shard():
    tracemalloc.start()
    try:
        shard = load_shard("synthetic", "train", worker_id=59, number_of_workers=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(shard.y) == 1000
    assert peak < 20_000_000, peak  # the whole split as float32 would be 188 MB


# --- validation -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, field", [
    ({"dataset": "mnist"}, "dataset"),
    ({"dataset": "synthetic", "split": "valid"}, "split"),
    ({"dataset": "synthetic", "worker_id": 2, "number_of_workers": 2}, "worker_id"),
    ({"dataset": "synthetic", "worker_id": -1, "number_of_workers": 2}, "worker_id"),
    ({"dataset": "synthetic", "number_of_workers": 0}, "number_of_workers"),
    ({"dataset": "synthetic", "limit": -5}, "limit"),
    ({"dataset": "synthetic", "number_of_workers": 4, "limit": 3}, "number_of_workers"),
])
def test_bad_arguments_raise_config_error_naming_the_field(kwargs, field):
    with pytest.raises(ConfigError) as err:
        load_shard(**kwargs)
    assert err.value.field == field


def test_unknown_dataset_message_lists_the_choices():
    with pytest.raises(ConfigError) as err:
        dataset_info("mnist")
    assert "fashion-mnist, emnist-balanced" in str(err.value) and "got 'mnist'" in str(err.value)

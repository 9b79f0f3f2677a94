"""The augmented Fashion-MNIST (data/augmented.py): per-shard generation, determinism, hold-out by source, memory."""

import tracemalloc

import numpy as np
import pytest

from faasgd import data, job
from faasgd.config import load_config
from faasgd.data import augmented, load_shard, validation_rows
from faasgd.errors import ConfigError

N_SOURCES, N_TEST = 60, 7


def idx(array: np.ndarray) -> bytes:
    """An uncompressed IDX file of a uint8 array."""
    return bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes()


def blobs(rng: np.random.Generator, n: int) -> np.ndarray:
    """n images of one bright Gaussian blob each, near the centre (so a shift or rotation keeps it inside)."""
    grid = np.arange(28)
    centres = rng.uniform(10, 17, (n, 2))
    dist2 = ((grid[None, :, None] - centres[:, 0, None, None]) ** 2
             + (grid[None, None, :] - centres[:, 1, None, None]) ** 2)
    return np.rint(255 * np.exp(-dist2 / (2 * 3.0 ** 2))).astype(np.uint8)


def write_sources(directory, n_train: int, n_test: int) -> dict:
    """A small Fashion-MNIST of blobs in `directory`; returns {split: (images, labels)}."""
    rng = np.random.default_rng(7)
    written = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        images, labels = blobs(rng, n), rng.integers(0, 10, n, dtype=np.uint8)
        (directory / f"{prefix}-images-idx3-ubyte").write_bytes(idx(images))
        (directory / f"{prefix}-labels-idx1-ubyte").write_bytes(idx(labels))
        written[split] = images, labels
    return written


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A small Fashion-MNIST of blobs at FAASGD_DATA_DIR; returns its {split: (images, labels)}."""
    monkeypatch.setenv("FAASGD_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(augmented, "CHUNK_ROWS", 16)  # several chunks per shard, sources split across them
    return write_sources(tmp_path, N_SOURCES, N_TEST)


def rows_of(dataset: str, workers: int, holdout: int = 0, split: str = "train") -> list[data.Shard]:
    return [load_shard(dataset, split, w, workers, scaled=False, holdout=holdout) for w in range(workers)]


def test_rows_are_the_same_per_seed_and_worker_and_differ_across_seeds(sources):
    first, again = rows_of("fashion-mnist-x4", 3), rows_of("fashion-mnist-x4", 3)
    for a, b in zip(first, again):
        assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    images = sources["train"][0][:5]
    assert np.array_equal(augmented.augment(images, 0, 4, seed=1), augmented.augment(images, 0, 4, seed=1))
    assert not np.array_equal(augmented.augment(images, 0, 4, seed=1), augmented.augment(images, 0, 4, seed=2))


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_shards_are_disjoint_and_covering_and_each_worker_makes_its_rows_alone(sources, workers):
    whole = load_shard("fashion-mnist-x4", "train", 0, 1, scaled=False)
    assert whole.total == 4 * N_SOURCES
    shards = rows_of("fashion-mnist-x4", workers)
    ids = np.concatenate([np.arange(s.start, s.stop) for s in shards])
    assert np.array_equal(ids, np.arange(whole.total))  # disjoint and covering, in order
    assert np.array_equal(np.concatenate([s.x for s in shards]), whole.x)  # a row is the same whoever makes it
    assert np.array_equal(np.concatenate([s.y for s in shards]), whole.y)


def test_validation_sources_never_train(sources):
    factor = 4
    rows = data.count_rows("fashion-mnist-x4", "train")
    held = validation_rows(rows, 9, 3, data.row_group("fashion-mnist-x4"))  # 9 rows asked: rounded to 3 sources
    assert held == 12
    validation = load_shard("fashion-mnist-x4", "validation", 0, 1, scaled=False, holdout=held)
    training = rows_of("fashion-mnist-x4", 3, held)
    trained_sources = {i // factor for s in training for i in range(s.start, s.stop)}
    held_sources = {i // factor for i in range(validation.start, validation.stop)}
    assert held_sources == set(range(N_SOURCES - 3, N_SOURCES)) and not trained_sources & held_sources
    trained_images = np.concatenate([s.x for s in training])
    for image in sources["train"][0][N_SOURCES - 3:]:  # no row made from a held-out image trains
        assert not (trained_images == image.ravel()).all(axis=1).any()
    with pytest.raises(ConfigError, match="validation_samples.*whole source images"):
        load_shard("fashion-mnist-x4", "train", 0, 1, holdout=10)
    config = load_config({}, {"dataset": "fashion-mnist-x4", "number_of_workers": 2, "validation_samples": 5})
    assert job.holdout(config) == (4 * N_SOURCES - 8, 8)


def centre_of_mass(images: np.ndarray) -> np.ndarray:
    grid = np.arange(28)
    mass = images.reshape(-1, 28, 28).astype(np.float64)
    total = mass.sum(axis=(1, 2))
    return np.stack([(mass.sum(axis=2) * grid).sum(axis=1) / total, (mass.sum(axis=1) * grid).sum(axis=1) / total], 1)


def test_copies_keep_the_label_and_stay_close_to_their_source(sources):
    images, labels = sources["train"]
    shard = load_shard("fashion-mnist-x8", "train", 0, 1, scaled=False)
    assert np.array_equal(shard.y, np.repeat(labels, 8))
    copies = shard.x.reshape(N_SOURCES, 8, 784)
    assert np.array_equal(copies[:, 0], images.reshape(N_SOURCES, 784))  # copy 0 is the image itself
    changed = copies[:, 1:]
    assert (changed != copies[:, :1]).any(axis=2).all()  # every other copy differs from its source
    moved = np.linalg.norm(centre_of_mass(changed) - np.repeat(centre_of_mass(images), 7, axis=0), axis=1)
    # a shift of at most 3 px each way, plus a rotation of at most 12 degrees of a blob <= 5 px from the centre
    assert moved.max() <= augmented.MAX_SHIFT * 2 ** 0.5 + 5 * 2 * np.sin(np.deg2rad(augmented.MAX_DEGREES) / 2) + 0.5
    assert moved.mean() > 1.0  # and they do move
    brightness = changed.reshape(-1, 784).mean(axis=1) / np.repeat(images.reshape(N_SOURCES, -1).mean(axis=1), 7)
    assert 0.8 < brightness.min() and brightness.max() < 1.3  # the blob stays inside, noise adds little


def test_the_test_split_is_fashion_mnists_own(sources):
    test = load_shard("fashion-mnist-x8", "test", 0, 1, scaled=False)
    assert np.array_equal(test.x, sources["test"][0].reshape(N_TEST, -1))


def test_making_a_shard_allocates_the_shard_and_one_chunk(tmp_path, monkeypatch):
    monkeypatch.setenv("FAASGD_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(augmented, "CHUNK_ROWS", 16)
    write_sources(tmp_path, 400, 1)  # x16: 6,400 rows, 5 MB; a chunk's temporaries are well under 1 MB

    def beyond_the_shard(workers: int) -> int:
        tracemalloc.start()
        shard = load_shard("fashion-mnist-x16", "train", 0, workers, scaled=False)
        most = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return most - shard.x.nbytes - shard.y.nbytes

    chunk = augmented.CHUNK_ROWS * 784 * 64  # a chunk's temporaries (float32 planes, indices), not the set's
    assert beyond_the_shard(1) <= chunk and beyond_the_shard(4) <= chunk

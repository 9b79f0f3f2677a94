"""A gzip'd IDX file is inflated once into the cache folder and read from there after: the same rows as the
stream, never a stale copy, nothing left of a failed copy, and the stream again where no copy can be made."""

import gzip
import os
import threading

import numpy as np
import pytest

from faasgd.data import inflated
from faasgd.data.idx import load_idx
from faasgd.errors import DataError
from test_data import idx_bytes


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(inflated.CACHE_ENV, str(folder))
    return folder


def gz_idx(path, rows=300, seed=0):
    array = np.random.default_rng(seed).integers(0, 256, size=(rows, 28, 28), dtype=np.uint8)
    path.write_bytes(gzip.compress(idx_bytes(array), compresslevel=1))
    return str(path), array


def copies(cache):
    folder = cache / "inflated"
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.exists() else []


def test_the_first_read_makes_the_copy_and_later_reads_use_it(tmp_path, cache):
    path, array = gz_idx(tmp_path / "images.gz")
    assert np.array_equal(load_idx(path, 10, 20), array[10:20])
    [copy] = copies(cache)
    assert (cache / "inflated" / copy).read_bytes() == idx_bytes(array)
    stat = os.stat(path)  # spoil the gzip body, keeping its size and time: only the copy can still serve
    body = bytearray(open(path, "rb").read())
    body[40:200] = bytes(160)
    open(path, "wb").write(body)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert np.array_equal(load_idx(path, 250, 300), array[250:300])


def test_a_changed_source_is_inflated_again_never_served_from_the_old_copy(tmp_path, cache):
    path, _ = gz_idx(tmp_path / "images.gz", seed=1)
    load_idx(path)
    _, other = gz_idx(tmp_path / "images.gz", rows=301, seed=2)
    assert np.array_equal(load_idx(path), other)
    assert len(copies(cache)) == 2


def test_a_truncated_file_leaves_no_copy_and_is_refused_as_before(tmp_path, cache):
    path, _ = gz_idx(tmp_path / "images.gz")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(DataError):
        load_idx(path)
    assert copies(cache) == [] and not [p for p in (cache / "inflated").iterdir() if p.suffix == ".part"]


def test_an_unwritable_cache_streams_the_same_rows(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv(inflated.CACHE_ENV, str(blocker))
    path, array = gz_idx(tmp_path / "images.gz")
    assert np.array_equal(load_idx(path, 5, 9), array[5:9])


def test_readers_at_the_same_moment_inflate_once(tmp_path, cache, monkeypatch):
    path, array = gz_idx(tmp_path / "images.gz", rows=2000)
    made, real = [], inflated._inflate
    monkeypatch.setattr(inflated, "_inflate", lambda *a: made.append(1) or real(*a))
    results = [None] * 4
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, load_idx(path, 100 * i, 100 * i + 50)))
               for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1]
    assert all(np.array_equal(results[i], array[100 * i:100 * i + 50]) for i in range(4))

"""Memory follows the shard: emnist-bymerge at 2 workers and fashion-mnist-x21 fit the function's 1 Gi (admission).

The archive holds only IDX headers with the real row counts (admission reads headers alone), so the check
is on EMNIST's real shape without its 561 MB.
"""

import gzip
import zipfile

import emnist
import numpy as np
import pytest

from faasgd.config import load_config
from faasgd.data import augmented
from faasgd.errors import TooLarge
from faasgd.functions import admission

BYMERGE = {"train": 697_932, "test": 116_323}  # NIST's emnist-bymerge (and byclass) rows
LIMIT = {"memory_limit": "1Gi"}  # stack.yml's emnist-train limits.memory


def header(rows: int, dims: tuple[int, ...]) -> bytes:
    return bytes([0, 0, 0x08, 1 + len(dims)]) + np.array((rows, *dims), ">u4").tobytes()


@pytest.fixture
def bymerge_headers(tmp_path, monkeypatch):
    path = tmp_path / "emnist.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for usage, rows in BYMERGE.items():
            for matrix, dim, dims in (("images", 3, (28, 28)), ("labels", 1, ())):
                name = emnist.ZIP_PATH_TEMPLATE.format(dataset="bymerge", usage=usage, matrix=matrix, dim=dim)
                archive.writestr(name, gzip.compress(header(rows, dims)))
    monkeypatch.setenv("FAASGD_EMNIST_ARCHIVE", str(path))


def test_a_bymerge_worker_of_two_fits_1gi_with_its_shard_as_uint8(bymerge_headers):
    config = load_config({}, {"dataset": "emnist-bymerge", "number_of_workers": 2})
    needs = admission.check_job(config, LIMIT, "redis")
    shard = -(-(BYMERGE["train"] - 5000) // 2) * 784  # 5000 held out; one byte a pixel
    assert 0.25 < shard / 2 ** 30 < 0.26
    assert shard < needs["worker_bytes"] < 2 ** 30
    as_float32 = load_config({}, {"dataset": "emnist-bymerge", "number_of_workers": 2, "algorithm": "grad_avg"})
    with pytest.raises(TooLarge, match="number_of_workers.*memory_limit=1Gi"):  # float32 rows: 1.01 GiB
        admission.check_job(as_float32, LIMIT, "redis")


def test_the_1gb_augmented_set_fits_at_two_workers_and_not_at_one(monkeypatch):
    rows = {"train": 60000, "test": 10000}  # Fashion-MNIST's, without reading its files
    monkeypatch.setattr(augmented.fashion, "count_rows", lambda split, data_dir=None: rows[split])
    two = load_config({}, {"dataset": "fashion-mnist-x21", "number_of_workers": 2})
    assert admission.check_job(two, LIMIT, "redis")["worker_bytes"] < 2 ** 30
    one = load_config({}, {"dataset": "fashion-mnist-x21", "number_of_workers": 1})
    with pytest.raises(TooLarge, match="number_of_workers"):  # 988 MB of shard alone
        admission.check_job(one, LIMIT, "redis")

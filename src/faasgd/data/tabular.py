"""The tabular data sets of LambdaML's tasks: `higgs-like`, `rcv1-like`, `blobs-like` (generated) and `libsvm:PATH`.

`blobs-like` is KMeans' task: BLOBS_K Gaussian blobs in BLOBS_FEATURES dimensions, the label its blob.

Unlike the image sets they are not uint8 pixels: rows are float32, dense (higgs-like, a dense libsvm file
is still read as CSR and kept so) or scipy CSR (rcv1-like, libsvm files), and stay sparse in every shard.

Splits (decided):
- generated: one seeded sequence of rows (generated.py, data seed GENERATED_SEED, whatever the job's seed:
  the job's seed draws the model's init and the workers' orders, not the task). The training split is its
  first `train_samples` rows (0: DEFAULT_TRAIN_ROWS), the test split the `test_samples` rows right after
  them (0: DEFAULT_TEST_ROWS), so the two never share a row and a larger train_samples extends a smaller one.
- `libsvm:PATH`: PATH is read on the function's side, under its libsvm folder ($FAASGD_LIBSVM_DIR, default
  LIBSVM_DIR: where stack.yml's `configuration.copy` puts files in the image). PATH is relative, of segments
  of [A-Za-z0-9_.-] and neither "." nor "..": a request can name a data file there and nothing else (not a
  secret file: a parse error would quote a line of it). If PATH.t exists (LIBSVM's own naming: a9a and a9a.t) it is the test split, read with
  the training file's classes and width; otherwise the last fifth of PATH's rows (at least one) is the test
  split and the rows before it the training split. train_samples / test_samples keep the first N rows (0: all).
The validation rows are then held out of the training split's end as for every data set (shard.py).
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING

import numpy as np

from faasgd.data import generated, libsvm
from faasgd.errors import ConfigError, DataError, DataMissing

if TYPE_CHECKING:
    import scipy.sparse as sp

BLOBS_K, BLOBS_FEATURES = 8, 16  # blobs-like: 8 seeded centres in 16 dimensions (KMeans' task)
GENERATED = {"higgs-like": generated.HIGGS_FEATURES, "rcv1-like": generated.RCV1_FEATURES,
             "blobs-like": BLOBS_FEATURES}  # name -> features
GENERATED_CLASSES = {"higgs-like": 2, "rcv1-like": 2, "blobs-like": BLOBS_K}
LIBSVM_PREFIX = "libsvm:"
GENERATED_SEED = 0  # the generated tasks' seed (the task and its rows), fixed so every job sees the same data
DEFAULT_TRAIN_ROWS = 10_000  # generated: training rows when train_samples is 0
DEFAULT_TEST_ROWS = 2_000  # generated: test rows when test_samples is 0
LIBSVM_TEST_SHARE = 5  # a libsvm file without PATH.t: its last 1/5 of rows are the test split
MAX_PATH = 1024
LIBSVM_DIR_ENV = "FAASGD_LIBSVM_DIR"
LIBSVM_DIR = "/home/app/function/data"  # stack.yml `configuration.copy` puts a project's data/ here in both images
_SEGMENT = re.compile(r"[A-Za-z0-9_.-]{1,255}\Z")


def is_tabular(dataset: str) -> bool:
    return dataset in GENERATED or (isinstance(dataset, str) and dataset.startswith(LIBSVM_PREFIX))


def check_libsvm_name(dataset: str) -> str:
    """`libsvm:PATH` with a plausible PATH (the file itself is read, and checked, on the function's side)."""
    path = dataset[len(LIBSVM_PREFIX):]
    segments = path.split("/")
    if not path or len(path) > MAX_PATH or any(not _SEGMENT.match(s) or s in (".", "..") for s in segments):
        raise ConfigError("dataset", f"libsvm:PATH needs a relative path under the function's libsvm folder "
                                     f"(${LIBSVM_DIR_ENV}), segments of [A-Za-z0-9_.-] other than . and .., "
                                     f"got {dataset[:80]!r}")
    return dataset


def libsvm_path(dataset: str) -> str:
    """Where the file of `libsvm:PATH` is on this machine: PATH under the function's libsvm folder."""
    return os.path.join(os.environ.get(LIBSVM_DIR_ENV) or LIBSVM_DIR, check_libsvm_name(dataset)[len(LIBSVM_PREFIX):])


@functools.lru_cache(maxsize=8)
def _generated(dataset: str, rows: int) -> tuple:
    if dataset == "higgs-like":
        return generated.higgs_like(rows, GENERATED_SEED)
    if dataset == "blobs-like":
        return generated.blobs(rows, GENERATED_SEED, BLOBS_K, BLOBS_FEATURES)
    X, y = generated.rcv1_like(rows, GENERATED_SEED)
    return X, y


@functools.lru_cache(maxsize=4)
def _libsvm(path: str, mtime: float) -> tuple:
    """(X train, y train, X test, y test, n_classes) of a libsvm file (and PATH.t when it exists)."""
    train = libsvm.read_libsvm(path)
    if os.path.exists(path + ".t"):
        test = libsvm.read_libsvm(path + ".t", classes=train.classes)
        width = max(train.X.shape[1], test.X.shape[1])
        Xtr, Xte = _widen(train.X, width), _widen(test.X, width)
        ytr, yte = train.y, test.y
    else:
        n = train.X.shape[0]
        if n < 2:
            raise DataError(f"{path}: {n} row; need at least 2 (training and test rows) or a {path}.t test file")
        cut = n - max(1, n // LIBSVM_TEST_SHARE)
        Xtr, Xte, ytr, yte = train.X[:cut], train.X[cut:], train.y[:cut], train.y[cut:]
    return Xtr, ytr, Xte, yte, max(2, len(train.classes))


def _widen(X: sp.csr_matrix, width: int) -> sp.csr_matrix:
    import scipy.sparse as sp  # lazily: an image-set worker never loads scipy (~20-28 MiB, 0.2 s)
    return X if X.shape[1] == width else sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))


def _libsvm_split(dataset: str) -> tuple:
    path = libsvm_path(dataset)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        raise DataMissing(dataset, f"no file {path}",
                          f"put the file in the function's libsvm folder (${LIBSVM_DIR_ENV})") from None
    try:
        return _libsvm(path, mtime)
    except DataMissing:
        raise
    except DataError as error:  # a file that is not libsvm text: the request named the wrong one (400)
        raise ConfigError("dataset", str(error)) from None


def info(dataset: str) -> tuple[int, int]:
    """(features, classes) of a tabular data set (a libsvm file is read for it)."""
    if dataset in GENERATED:
        return GENERATED[dataset], GENERATED_CLASSES[dataset]
    Xtr, _, _, _, classes = _libsvm_split(dataset)
    return Xtr.shape[1], classes


def row_bytes(dataset: str) -> int:
    """About the bytes one training row takes in memory (CSR: values, column indices and a row pointer)."""
    if dataset in ("higgs-like", "blobs-like"):
        return 4 * GENERATED[dataset]
    if dataset == "rcv1-like":
        return int(12 * generated.RCV1_DENSITY * generated.RCV1_FEATURES) + 8
    Xtr = _libsvm_split(dataset)[0]
    return int((Xtr.data.nbytes + Xtr.indices.nbytes + Xtr.indptr.nbytes) / max(1, Xtr.shape[0])) + 1


def count_rows(dataset: str, split: str, limit: int = 0) -> int:
    """Rows of the split after `limit` (generated: exactly limit, or the default; files: at most limit)."""
    if dataset in GENERATED:
        return limit if limit > 0 else (DEFAULT_TRAIN_ROWS if split == "train" else DEFAULT_TEST_ROWS)
    Xtr, _, Xte, _, _ = _libsvm_split(dataset)
    total = (Xtr if split == "train" else Xte).shape[0]
    return min(total, limit) if limit > 0 else total


def rows(dataset: str, split: str, start: int, stop: int, after: int = 0) -> tuple:
    """(X, y) of rows [start, stop) of the split: float32 dense or CSR (as the data set stores them), int64 labels.
    `after`: the job's train_samples, after whose training rows a generated test split starts."""
    import scipy.sparse as sp  # lazily: an image-set worker never loads scipy (~20-28 MiB, 0.2 s)
    if dataset in GENERATED:
        offset = 0 if split == "train" else count_rows(dataset, "train", after)
        X, y = _generated(dataset, offset + stop)
        X, y = X[offset + start:offset + stop], y[offset + start:offset + stop]
    else:
        Xtr, ytr, Xte, yte, _ = _libsvm_split(dataset)
        X, y = (Xtr, ytr) if split == "train" else (Xte, yte)
        X, y = X[start:stop], y[start:stop]
    X = X.astype(np.float32) if X.dtype != np.float32 else X
    return (X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X)), np.asarray(y, dtype=np.int64)

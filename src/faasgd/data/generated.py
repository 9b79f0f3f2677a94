"""Seeded generated data sets of the shapes LambdaML trains on, any size, no download.

- `higgs_like`: dense float32 (n, 28), binary; like HIGGS (21 "low-level" + 7 "high-level" features,
  about 53 % positives, a linear model tops out near 70 % accuracy): two Gaussian classes whose means
  differ by a fixed shift, the high-level features wider for the signal (so a non-linear model can do
  better), mixed by a fixed near-identity matrix so the features correlate.
- `rcv1_like`: float32 CSR (n, 47236), binary, density about 0.0016 (about 76 non-zeros a row) like
  RCV1-binary: columns drawn with Zipf-like frequencies (a few common words, a long tail), tf-idf-like
  positive values, rows L2-normalised; the label is the sign of a fixed hidden linear score (weights
  Gaussian times the column's frequency: the common words carry the label), flipped for LABEL_NOISE
  of the rows (linearly separable but for that noise; logistic regression reaches about 0.9).
- `blobs`: dense float32 (n, d) around k fixed centres (uniform in [-10, 10]^d, unit spread), for KMeans.

Determinism: the task (shift, mixing, column frequencies, hidden weights, centres) is drawn from
(seed, data set); rows come in blocks of BLOCK_ROWS, each from its own generator seeded by
(seed, data set, block), so the same seed gives the same bytes and row i is the same whatever n
(a worker may draw any row range, and a larger n extends a smaller one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from faasgd.checks import whole_number
from faasgd.errors import ConfigError

if TYPE_CHECKING:
    import scipy.sparse as sp

BLOCK_ROWS = 1024  # rows drawn from one generator
CODES = {"higgs": 1, "rcv1": 2, "blobs": 3}  # keeps the data sets' streams apart for one seed
HIGGS_FEATURES = 28
HIGGS_HIGH_LEVEL = 7  # the last 7 features: wider for the signal class
HIGGS_POSITIVE = 0.53  # share of signal rows
HIGGS_SEPARATION = 1.0  # distance between the class means (whitened): linear accuracy about 0.69
HIGGS_SIGNAL_SCALE = 1.4  # standard deviation of the high-level features for the signal class
RCV1_FEATURES = 47236
RCV1_DENSITY = 0.0016
ZIPF_OFFSET = 20  # column j is drawn with probability proportional to 1 / (rank + ZIPF_OFFSET)
LABEL_NOISE = 0.05  # share of rcv1_like rows whose label is flipped


def higgs_like(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (X float32 (n, 28), y int64 0/1) of the Higgs-like task for `seed`."""
    check_size(n, seed)
    task = np.random.default_rng([seed, CODES["higgs"]])
    shift = task.normal(size=HIGGS_FEATURES)
    shift *= HIGGS_SEPARATION / np.linalg.norm(shift)
    mixing = np.eye(HIGGS_FEATURES) + 0.3 * task.normal(size=(HIGGS_FEATURES,) * 2) / np.sqrt(HIGGS_FEATURES)
    parts = []
    for rng in block_rngs(n, seed, "higgs"):
        y = (rng.random(BLOCK_ROWS) < HIGGS_POSITIVE).astype(np.int64)
        z = rng.normal(size=(BLOCK_ROWS, HIGGS_FEATURES))
        z[:, -HIGGS_HIGH_LEVEL:] *= np.where(y[:, None] == 1, HIGGS_SIGNAL_SCALE, 1.0)
        z += np.outer(y - 0.5, shift)
        parts.append(((z @ mixing).astype(np.float32), y))
    return np.concatenate([p[0] for p in parts])[:n], np.concatenate([p[1] for p in parts])[:n]


def rcv1_like(n: int, seed: int, n_features: int = RCV1_FEATURES,
              density: float = RCV1_DENSITY) -> tuple[sp.csr_matrix, np.ndarray]:
    """Return (X float32 CSR (n, n_features) of about `density`, y int64 0/1) of the RCV1-like task."""
    import scipy.sparse as sp  # lazily: an image-set worker never loads scipy (~20-28 MiB, 0.2 s)
    check_size(n, seed)
    whole_number(n_features, "n_features", low=1, must="an integer of at least 1", numpy=True)
    if not 0 < density <= 1 or density * n_features < 1:
        raise ConfigError("density", f"must be in (0, 1] with at least one non-zero a row "
                                     f"(density * n_features >= 1), got {density!r}")
    task = np.random.default_rng([seed, CODES["rcv1"]])
    freq = 1.0 / (np.arange(n_features) + ZIPF_OFFSET)
    freq = freq[task.permutation(n_features)] / freq.sum()
    idf = np.log(1.0 / freq).astype(np.float32)
    hidden = task.normal(size=n_features) * freq  # the common words carry the label, as in text
    blocks = [sparse_block(rng, freq, idf, density) for rng in block_rngs(n, seed, "rcv1")]
    X = sp.vstack(blocks, format="csr")[:n]
    X.sum_duplicates()  # none: marks the indices sorted and unique (canonical CSR)
    y = (np.asarray(X @ hidden) > 0).astype(np.int64)
    flip = np.concatenate([rng.random(BLOCK_ROWS) < LABEL_NOISE for rng in block_rngs(n, seed, "rcv1", 1)])[:n]
    return X, np.where(flip, 1 - y, y)


def sparse_block(rng: np.random.Generator, freq: np.ndarray, idf: np.ndarray, density: float) -> sp.csr_matrix:
    """Return BLOCK_ROWS CSR rows: k_i distinct columns drawn by `freq`, tf-idf-like values, unit rows."""
    import scipy.sparse as sp  # lazily: an image-set worker never loads scipy (~20-28 MiB, 0.2 s)
    d = len(freq)
    want = np.clip(rng.poisson(density * d, size=BLOCK_ROWS), 1, d)
    draws = np.minimum(np.ceil(1.3 * want).astype(np.int64) + 3, 4 * d)  # extra draws: duplicates are dropped
    rows = np.repeat(np.arange(BLOCK_ROWS), draws)
    keys = np.unique(rows * d + rng.choice(d, size=rows.size, p=freq))
    rows, cols = np.divmod(keys, d)
    order = np.lexsort((rng.random(keys.size), rows))  # a random order within each row
    rank = np.arange(keys.size) - np.searchsorted(rows[order], rows[order])
    keep = np.sort(order[rank < want[rows[order]]])
    rows, cols = rows[keep], cols[keep]
    values = (rng.exponential(1.0, size=keep.size).astype(np.float32) + 0.5) * idf[cols]
    X = sp.csr_matrix((values, (rows, cols)), shape=(BLOCK_ROWS, d), dtype=np.float32)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)).astype(np.float32) @ X)


def blobs(n: int, seed: int, k: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (X float32 (n, d), y int64: the true blob 0..k-1 of each row) around k seeded centres."""
    check_size(n, seed)
    for field, value in (("k", k), ("d", d)):
        whole_number(value, field, low=1, must="an integer of at least 1", numpy=True)
    centres = blob_centres(seed, k, d)
    parts = []
    for rng in block_rngs(n, seed, "blobs"):
        y = rng.integers(0, k, size=BLOCK_ROWS)
        parts.append(((centres[y] + rng.normal(size=(BLOCK_ROWS, d))).astype(np.float32), y.astype(np.int64)))
    return np.concatenate([p[0] for p in parts])[:n], np.concatenate([p[1] for p in parts])[:n]


def blob_centres(seed: int, k: int, d: int) -> np.ndarray:
    """Return the (k, d) float64 centres of `blobs` for this seed."""
    return np.random.default_rng([seed, CODES["blobs"], k, d]).uniform(-10, 10, size=(k, d))


def train_test_split(X, y, test_fraction: float = 0.2, seed: int = 0):
    """Return (X_train, X_test, y_train, y_test): a seeded random split, CSR staying CSR."""
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ConfigError("y", f"must be {X.shape[0]} labels (one per row of X), got shape {y.shape}")
    if not 0 < test_fraction < 1:
        raise ConfigError("test_fraction", f"must be in (0, 1), got {test_fraction!r}")
    n_test = int(round(test_fraction * len(y)))
    if not 0 < n_test < len(y):
        raise ConfigError("test_fraction", f"leaves an empty split of {len(y)} rows, got {test_fraction!r}")
    order = np.random.default_rng(seed).permutation(len(y))
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    return X[train], X[test], y[train], y[test]


def block_rngs(n: int, seed: int, name: str, stream: int = 0):
    """Yield one generator per block of BLOCK_ROWS rows covering n rows."""
    for block in range((n + BLOCK_ROWS - 1) // BLOCK_ROWS):
        yield np.random.default_rng([seed, CODES[name], stream, block])


def check_size(n: int, seed: int) -> None:
    """Raise ConfigError naming n or seed unless n >= 1 and seed >= 0 are integers."""
    whole_number(n, "n", low=1, must="an integer of at least 1", numpy=True)
    whole_number(seed, "seed", low=0, numpy=True)

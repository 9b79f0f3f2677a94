"""LambdaML's distributed KMeans (Lloyd's algorithm): per-shard sums and counts, merged once a round.

Each round every worker assigns its shard's rows to the nearest current centroid and returns a
`Partial`: per centroid the sum of its rows (k, d), their count (k,) and the shard's inertia (sum of
squared distances to the nearest centroid). Merging the partials of all shards gives the next
centroids: sum of sums / sum of counts, and a centroid no row chose (count 0) stays where it was
(scikit-learn would move it to a far point instead; LambdaML keeps it). One merge over all shards is
exactly one Lloyd iteration over the whole data set, whatever the sharding.

Centroids travel like any model: one flat float32 vector of k * d numbers (every function here takes
it flat or as (k, d) and answers in the same form). A partial travels as one flat float64 blob
(`pack` / `unpack`): float64, because the sums add up a whole shard through the one-hot product
(the form that keeps CSR sparse), which accumulates sequentially: in float32 that loses about n * 1e-7
relative (6e-6 measured at 2 * 10^5 rows), so merged centroids would drift from Lloyd's in float64 as
shards grow. The inertia alone would not show it (at a Lloyd update the inertia is flat in the
centroids, so their error enters squared); the tests therefore compare the centroids with
scikit-learn's too. The cost is (k * d + k + 1) * 8 bytes a partial. Distances and sums are computed
in float64; a CSR input stays sparse (X @ C.T, and the sums as onehot @ X); the merged centroids keep
the dtype they came in (float32 to travel).
"""

from typing import NamedTuple

import numpy as np

from faasgd.checks import whole_number
from faasgd.lambdaml.convex.linear import as_inputs, issparse
from faasgd.errors import ConfigError


class Partial(NamedTuple):
    """One shard's share of a Lloyd iteration."""

    sums: np.ndarray  # (k, d) float64: sum of the rows nearest to each centroid
    counts: np.ndarray  # (k,) float64: how many rows chose each centroid (exact up to 2^53)
    inertia: float  # sum over the shard's rows of the squared distance to their nearest centroid


def init(X, k: int, rng: np.random.Generator) -> np.ndarray:
    """Return k distinct rows of X, chosen by rng, as a flat float32 vector of initial centroids."""
    X = as_inputs(X)
    k = whole_number(k, "k", low=1, high=X.shape[0], must=f"an integer in 1..{X.shape[0]} (the rows given)", numpy=True)
    rows = np.sort(rng.choice(X.shape[0], size=k, replace=False))
    chosen = X[rows].toarray() if issparse(X) else X[rows]
    return np.asarray(chosen, dtype=np.float32).ravel()


def partial(centroids: np.ndarray, X) -> Partial:
    """Return this shard's Partial for the current centroids."""
    X = as_inputs(X, np.float64)  # one float64 copy of the shard, shared by distances and sums
    C = as_centroids(centroids, X.shape[1])
    labels, distances = assign(C, X)
    import scipy.sparse as sp  # lazily (convex/linear.issparse)

    onehot = sp.csr_matrix((np.ones(len(labels)), (labels, np.arange(len(labels)))), shape=(len(C), len(labels)))
    sums = onehot @ X
    sums = sums.toarray() if issparse(sums) else np.asarray(sums)
    counts = np.bincount(labels, minlength=len(C)).astype(np.float64)
    return Partial(sums.astype(np.float64, copy=False), counts, float(distances.sum()))


def merge(partials, centroids: np.ndarray) -> np.ndarray:
    """Return the next centroids (same shape and dtype as `centroids`) from every shard's Partial."""
    partials = list(partials)
    if not partials:
        raise ConfigError("partials", "need at least one shard's partial to merge")
    C = np.asarray(centroids)
    k, d = partials[0].sums.shape
    current = as_centroids(C, d)
    sums, counts = np.zeros((k, d)), np.zeros(k)
    for p in partials:
        if p.sums.shape != (k, d) or p.counts.shape != (k,):
            raise ConfigError("partials", f"every partial must be ({k}, {d}) sums and ({k},) counts, "
                                          f"got {p.sums.shape} and {p.counts.shape}")
        sums += p.sums
        counts += p.counts
    if current.shape != (k, d):
        raise ConfigError("centroids", f"must be {k} centroids of {d} features, got {current.shape}")
    chosen = counts > 0
    new = current.astype(np.float64)
    new[chosen] = sums[chosen] / counts[chosen, None]
    return new.astype(C.dtype).reshape(C.shape)


def inertia(centroids: np.ndarray, X) -> float:
    """Return the sum over X's rows of the squared distance to the nearest centroid."""
    X = as_inputs(X, np.float64)
    return float(assign(as_centroids(centroids, X.shape[1]), X)[1].sum())


def pack(p: Partial) -> np.ndarray:
    """Return a Partial as one flat float64 vector: sums (k*d), counts (k), inertia (1)."""
    return np.concatenate([p.sums.ravel(), p.counts, [p.inertia]]).astype(np.float64)


def unpack(blob: np.ndarray, k: int, n_features: int) -> Partial:
    """Return the Partial packed in `blob` (from `pack`) for k centroids of n_features."""
    blob = np.asarray(blob)
    if blob.ndim != 1 or blob.size != k * n_features + k + 1:
        raise ConfigError("partial", f"a packed partial of {k} centroids x {n_features} features has "
                                     f"{k * n_features + k + 1} numbers, got shape {blob.shape}")
    blob = blob.astype(np.float64, copy=False)
    kd = k * n_features
    return Partial(blob[:kd].reshape(k, n_features).copy(), blob[kd:kd + k].copy(), float(blob[-1]))


def assign(C: np.ndarray, X) -> tuple[np.ndarray, np.ndarray]:
    """Return (the nearest centroid of each row, the squared distance to it), computed in float64."""
    C = C.astype(np.float64)
    if issparse(X):
        X64 = X.astype(np.float64, copy=False)
        row_sq = np.asarray(X64.multiply(X64).sum(axis=1)).ravel()
        cross = np.asarray(X64 @ C.T)
    else:
        X64 = X.astype(np.float64, copy=False)
        row_sq = np.einsum("ij,ij->i", X64, X64)
        cross = X64 @ C.T
    d2 = row_sq[:, None] - 2 * cross + np.einsum("ij,ij->i", C, C)[None, :]
    labels = d2.argmin(axis=1)
    return labels, np.maximum(d2[np.arange(len(labels)), labels], 0.0)


def as_centroids(centroids: np.ndarray, n_features: int) -> np.ndarray:
    """Return centroids as (k, n_features), from a flat vector or a 2-D array; ConfigError('centroids')."""
    C = np.asarray(centroids)
    if C.dtype.kind != "f" or C.ndim not in (1, 2) or C.size == 0 or C.size % n_features:
        raise ConfigError("centroids", f"must be k * {n_features} floats (flat or (k, {n_features})), "
                                       f"got shape {C.shape} of {C.dtype}")
    if C.ndim == 2 and C.shape[1] != n_features:
        raise ConfigError("centroids", f"must have {n_features} features, got {C.shape[1]}")
    return C.reshape(-1, n_features)

"""What logistic regression and the linear SVM share: the flat layout, and checked inputs and labels.

A linear model over d features with k outputs is ONE flat vector of (d + 1) * k numbers: the weights
W (d, k) row-major, then the biases b (k,). A binary task has k = 1 (one score per row, sign or sigmoid),
a multinomial one k = C. The layout never needs to be stored beside the vector: k follows from the
vector's length and the inputs' width, so stores and sync rounds move it like the MLP's buffer.

Inputs X are a dense ndarray or a scipy CSR matrix (any scipy sparse input is converted to CSR, never
to dense); the models only ever compute X @ W and X.T @ r, which both keep a CSR input sparse. The
computations follow the parameters' dtype (float32 to train, float64 for gradient checks).
"""

import sys

import numpy as np

from faasgd.checks import whole_number
from faasgd.errors import ConfigError


def issparse(X) -> bool:
    """A scipy sparse matrix? Asked without importing scipy: a process that never loaded it holds none (an
    image-set worker never does: ~20-28 MiB and 0.2 s saved; the tabular sets' readers import it)."""
    check = getattr(sys.modules.get("scipy.sparse"), "issparse", None)  # None: not (fully) imported yet
    return check is not None and check(X)


def outputs(n_classes: int) -> int:
    """Return k, the scores per row: 1 for a binary task (n_classes 2), else n_classes."""
    n_classes = whole_number(n_classes, "n_classes", low=2, must="an integer of at least 2", numpy=True)
    return 1 if n_classes == 2 else n_classes


def init(n_features: int, n_classes: int) -> np.ndarray:
    """Return the zero flat float32 vector of a linear model with `n_features` inputs and `n_classes` classes."""
    n_features = whole_number(n_features, "n_features", low=1, must="an integer of at least 1", numpy=True)
    return np.zeros((n_features + 1) * outputs(n_classes), dtype=np.float32)


def as_inputs(X, dtype=None):
    """Return X as a 2-D float ndarray or a CSR matrix (sparse stays sparse); ConfigError('X') otherwise."""
    if issparse(X):
        X = X.tocsr() if X.format != "csr" else X
    elif isinstance(X, np.ndarray):
        if X.dtype.kind not in "fiub":
            raise ConfigError("X", f"must hold numbers, got dtype {X.dtype}")
    else:
        raise ConfigError("X", f"must be a numpy array or a scipy sparse CSR matrix, got {type(X).__name__}")
    if X.ndim != 2 or X.shape[0] < 1:
        raise ConfigError("X", f"must be 2-D with at least one row, got shape {X.shape}")
    if X.dtype.kind != "f" or (dtype is not None and X.dtype.itemsize < np.dtype(dtype).itemsize):
        X = X.astype(dtype or np.float32)
    return X


def split(flat: np.ndarray, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Return views (W (d, k), b (k,)) of `flat` for inputs of `n_features` columns; ConfigError('params')."""
    if not isinstance(flat, np.ndarray) or flat.ndim != 1 or flat.dtype.kind != "f":
        raise ConfigError("params", f"must be a flat float vector, got {getattr(flat, 'shape', type(flat))}")
    k, rest = divmod(flat.size, n_features + 1)
    if rest or k < 1:
        raise ConfigError("params", f"{flat.size} numbers do not fit {n_features} features: "
                                    f"need (n_features + 1) * k")
    return flat[:n_features * k].reshape(n_features, k), flat[n_features * k:]


def bias_size(flat_size: int, n_features: int) -> int:
    """Return k, the number of biases (the unpenalised tail of the flat vector)."""
    return flat_size // (n_features + 1)


def as_labels(y, n_rows: int, n_classes: int) -> np.ndarray:
    """Return y as int64 labels in [0, n_classes), one per row; ConfigError('y') otherwise."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ConfigError("y", f"must be {n_rows} labels (one per row of X), got shape {y.shape}")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ConfigError("y", "labels must be whole numbers")
    elif y.dtype.kind not in "iub":
        raise ConfigError("y", f"labels must be integers, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ConfigError("y", f"labels must lie in 0..{n_classes - 1}, got {y.min()}..{y.max()}")
    return y


def check_l2(l2: float) -> float:
    """Return the L2 strength as a float; ConfigError('l2') when negative or not finite."""
    if not np.isfinite(l2) or l2 < 0:
        raise ConfigError("l2", f"must be a finite number >= 0, got {l2!r}")
    return float(l2)


def scores(flat: np.ndarray, X) -> np.ndarray:
    """Return the scores X @ W + b, (n, k), in the parameters' dtype."""
    X = as_inputs(X, flat.dtype)
    W, b = split(flat, X.shape[1])
    out = np.asarray(X @ W, dtype=flat.dtype)
    out += b
    return out


def gradient(flat: np.ndarray, X, residual: np.ndarray, l2: float) -> np.ndarray:
    """Return the flat gradient of mean(loss) + l2/2 ||W||^2 given residual = d loss_i / d score_i (n, k)."""
    W, _ = split(flat, X.shape[1])
    grad = np.empty_like(flat)
    gW, gb = split(grad, X.shape[1])
    n = residual.shape[0]
    gW[...] = np.asarray(X.T @ residual) / n
    if l2:
        gW += l2 * W
    gb[...] = residual.sum(axis=0) / n
    return grad


def penalty(flat: np.ndarray, n_features: int, l2: float) -> float:
    """Return l2/2 ||W||^2 (the biases are not penalised)."""
    if not l2:
        return 0.0
    W, _ = split(flat, n_features)
    return 0.5 * l2 * float(np.dot(W.ravel().astype(np.float64), W.ravel().astype(np.float64)))

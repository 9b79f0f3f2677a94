"""A linear SVM on one flat vector: mean hinge loss max(0, 1 - s (x.w + b)) + l2/2 ||w||^2, binary only.

Labels are 0/1 (as every faasgd data set gives them) and mapped to s = -1/+1 inside. The flat layout is
linear.py's with k = 1: w (d,) then b, d + 1 numbers. The hinge is not differentiable at margin 1; the
(sub)gradient there takes the flat side (0), like LambdaML's and scikit-learn's SGD. Sparse inputs stay CSR.
"""

import numpy as np

from faasgd.lambdaml.convex import linear
from faasgd.errors import ConfigError


def init(n_features: int, n_classes: int = 2) -> np.ndarray:
    """Return the zero flat float32 vector (d + 1 numbers); the SVM is binary, so n_classes must be 2."""
    if n_classes != 2:
        raise ConfigError("n_classes", f"the linear SVM is binary: must be 2, got {n_classes!r}")
    return linear.init(n_features, 2)


def loss_and_grad(flat: np.ndarray, X, y, l2: float = 0.0) -> tuple[float, np.ndarray]:
    """Return (mean hinge loss + l2/2 ||w||^2, its subgradient as a flat vector of flat's dtype)."""
    l2 = linear.check_l2(l2)
    X = linear.as_inputs(X, flat.dtype)
    z = binary_scores(flat, X)
    sign = (2 * linear.as_labels(y, X.shape[0], 2) - 1).astype(z.dtype)[:, None]
    margin = 1 - sign * z
    active = margin > 0
    loss = float(np.mean(np.where(active, margin, 0)))
    residual = np.where(active, -sign, 0).astype(z.dtype)
    return loss + linear.penalty(flat, X.shape[1], l2), linear.gradient(flat, X, residual, l2)


def predict(flat: np.ndarray, X) -> np.ndarray:
    """Return the predicted labels (n,) int64, 0 or 1."""
    return (binary_scores(flat, X)[:, 0] > 0).astype(np.int64)


def accuracy(flat: np.ndarray, X, y) -> float:
    """Return the share of rows whose predicted label is y."""
    pred = predict(flat, X)
    return float(np.mean(pred == linear.as_labels(y, len(pred), 2)))


def binary_scores(flat: np.ndarray, X) -> np.ndarray:
    """Return the scores (n, 1); ConfigError('params') when flat is not a binary model for X."""
    z = linear.scores(flat, X)
    if z.shape[1] != 1:
        raise ConfigError("params", f"the linear SVM needs n_features + 1 numbers, got {flat.size}")
    return z

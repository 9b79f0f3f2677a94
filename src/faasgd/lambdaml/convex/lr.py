"""Logistic regression on one flat vector: binary (sigmoid, labels 0/1) or multinomial (softmax, 0..C-1).

The layout is linear.py's: W (d, k) then b (k,), k = 1 for two classes and C otherwise, so a binary
model is exactly d + 1 numbers like LambdaML's. The loss is the mean cross-entropy over the rows plus
l2/2 ||W||^2 (biases unpenalised, as scikit-learn's intercept); the gradient is X.T @ (p - y) / n + l2 W,
so a CSR input is never densified.
"""

import numpy as np

from faasgd.lambdaml.convex import linear

init = linear.init


def loss_and_grad(flat: np.ndarray, X, y, l2: float = 0.0) -> tuple[float, np.ndarray]:
    """Return (mean cross-entropy + l2/2 ||W||^2, its gradient as a flat vector of flat's dtype)."""
    l2 = linear.check_l2(l2)
    X = linear.as_inputs(X, flat.dtype)
    z = linear.scores(flat, X)
    if z.shape[1] == 1:
        y = linear.as_labels(y, X.shape[0], 2)
        sign = (2 * y - 1).astype(z.dtype)[:, None]
        loss = float(np.mean(np.logaddexp(0.0, -sign * z)))
        residual = sigmoid(z) - y[:, None].astype(z.dtype)
    else:
        y = linear.as_labels(y, X.shape[0], z.shape[1])
        z -= z.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(z).sum(axis=1, keepdims=True))
        log_p = z - log_norm
        rows = np.arange(len(y))
        loss = float(-np.mean(log_p[rows, y]))
        residual = np.exp(log_p)
        residual[rows, y] -= 1
    return loss + linear.penalty(flat, X.shape[1], l2), linear.gradient(flat, X, residual, l2)


def predict_proba(flat: np.ndarray, X) -> np.ndarray:
    """Return P(class 1) (n,) for a binary model, or the class probabilities (n, C) for a multinomial one."""
    z = linear.scores(flat, X)
    if z.shape[1] == 1:
        return sigmoid(z[:, 0])
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def predict(flat: np.ndarray, X) -> np.ndarray:
    """Return the predicted labels (n,) int64."""
    z = linear.scores(flat, X)
    if z.shape[1] == 1:
        return (z[:, 0] > 0).astype(np.int64)
    return z.argmax(axis=1).astype(np.int64)


def accuracy(flat: np.ndarray, X, y) -> float:
    """Return the share of rows whose predicted label is y."""
    pred = predict(flat, X)
    k = linear.bias_size(flat.size, linear.as_inputs(X).shape[1])
    return float(np.mean(pred == linear.as_labels(y, len(pred), 2 if k == 1 else k)))


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Return 1 / (1 + exp(-z)) without overflow for large |z|."""
    return np.exp(-np.logaddexp(0.0, -z)).astype(z.dtype, copy=False)

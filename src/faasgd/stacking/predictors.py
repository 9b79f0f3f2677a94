"""Fitted models as plain numpy arrays, and prediction from them: what a function holds after decoding.

Each predictor is a frozen dataclass of arrays with `predict(x)`, written to give what the scikit-learn
estimator it came from gives (tests/unit/stacking/test_stacking.py checks them against scikit-learn):
  Linear    LinearSVR, Lasso: x @ coef + intercept
  Forest    RandomForestRegressor: the mean over trees of the leaf each row reaches (x <= threshold: left);
            every tree's nodes in one set of arrays, children always after their parent (so a walk ends)
  Neighbors KNeighborsRegressor (uniform, Euclidean): the mean label of the k nearest training rows
  Logistic  LogisticRegression, binary: class 1 where x @ coef + intercept > 0
`from_estimator` reads a fitted scikit-learn estimator's attributes (no scikit-learn import needed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Linear:
    kind: str  # LinearSVR or Lasso
    coef: np.ndarray  # (n_features,) float64
    intercept: np.ndarray  # () float64

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float64) @ self.coef + float(self.intercept)


@dataclass(frozen=True)
class Forest:
    kind: str  # RandomForestRegressor
    roots: np.ndarray  # (trees,) int64: each tree's first node
    left: np.ndarray  # (nodes,) int64: left child, -1 at a leaf
    right: np.ndarray  # (nodes,) int64: right child, -1 at a leaf
    feature: np.ndarray  # (nodes,) int64: the feature split on (ignored at a leaf)
    threshold: np.ndarray  # (nodes,) float64: x[feature] <= threshold goes left
    value: np.ndarray  # (nodes,) float64: the node's prediction (used at leaves)

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)  # scikit-learn's trees compare float32 features
        rows = np.arange(len(x))
        total = np.zeros(len(x))
        for root in self.roots:
            node = np.full(len(x), root, np.int64)
            while True:
                inner = self.left[node] >= 0
                if not inner.any():
                    break
                go_left = x[rows, np.where(inner, self.feature[node], 0)] <= self.threshold[node]
                node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
            total += self.value[node]
        return total / len(self.roots)


@dataclass(frozen=True)
class Neighbors:
    kind: str  # KNeighborsRegressor
    fit_x: np.ndarray  # (rows, n_features) float32: the training rows
    fit_y: np.ndarray  # (rows,) float64: their labels
    k: np.ndarray  # () int64: neighbours averaged

    def predict(self, x: np.ndarray) -> np.ndarray:
        x, fit = np.asarray(x, np.float64), self.fit_x.astype(np.float64)
        distances = (x * x).sum(1)[:, None] - 2 * x @ fit.T + (fit * fit).sum(1)[None, :]
        nearest = np.argpartition(distances, int(self.k) - 1, axis=1)[:, :int(self.k)]
        return self.fit_y[nearest].mean(1)


@dataclass(frozen=True)
class Logistic:
    kind: str  # LogisticRegression (binary: classes 0 and 1)
    coef: np.ndarray  # (inputs,) float64
    intercept: np.ndarray  # () float64

    def decision(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float64) @ self.coef + float(self.intercept)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return (self.decision(x) > 0).astype(np.int64)


Predictor = Linear | Forest | Neighbors | Logistic


def from_estimator(estimator) -> Predictor:
    """The arrays of a fitted scikit-learn estimator (one of the base models or the meta-model)."""
    kind = type(estimator).__name__
    if kind in ("LinearSVR", "Lasso"):
        return Linear(kind, np.asarray(estimator.coef_, np.float64).ravel(),
                      np.asarray(estimator.intercept_, np.float64).reshape(-1)[0].reshape(()))
    if kind == "LogisticRegression":
        if list(estimator.classes_) != [0, 1]:
            raise ValueError(f"the meta-model must be binary over classes 0 and 1, got {list(estimator.classes_)}")
        return Logistic(kind, np.asarray(estimator.coef_, np.float64).ravel(),
                        np.asarray(estimator.intercept_, np.float64).reshape(()))
    if kind == "KNeighborsRegressor":
        return Neighbors(kind, np.asarray(estimator._fit_X, np.float32), np.asarray(estimator._y, np.float64).ravel(),
                         np.asarray(estimator.n_neighbors, np.int64))
    if kind == "RandomForestRegressor":
        parts, roots, offset = [], [], 0
        for tree in (e.tree_ for e in estimator.estimators_):
            shift = lambda c: np.where(c >= 0, c + offset, -1)  # noqa: E731
            parts.append((shift(tree.children_left), shift(tree.children_right), tree.feature, tree.threshold,
                          tree.value.reshape(tree.node_count, -1)[:, 0]))
            roots.append(offset)
            offset += tree.node_count
        left, right, feature, threshold, value = (np.concatenate(column) for column in zip(*parts))
        return Forest(kind, np.asarray(roots, np.int64), left.astype(np.int64), right.astype(np.int64),
                      np.where(left >= 0, feature, 0).astype(np.int64), threshold.astype(np.float64),
                      value.astype(np.float64))
    raise ValueError(f"no array form for {kind}")

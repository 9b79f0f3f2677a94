"""Consensus ADMM for the linear models (lr, svm), as LambdaML runs it: pure functions on flat vectors.

The problem: minimise F(w) = mean loss over all rows + l2/2 ||W||^2 (biases unpenalised) when the rows
are split over N workers. In consensus form each worker i keeps its own copy x_i and a scaled dual u_i,
and all agree on z:

    minimise  sum_i f_i(x_i) + g(z)   subject to x_i = z,
    f_i(x) = weight_i * (mean loss over shard i),  weight_i = N n_i / n  (1 when shards are equal),
    g(z)   = N * l2/2 ||W_z||^2,  so that sum_i f_i + g = N * F.

One round:
  1. each worker (`worker_update`): x_i <- a fixed number of gradient steps on
     f_i(x) + rho/2 ||x - z + u_i||^2 from its current x_i (LambdaML's inexact x-update), and sends
     x_i + u_i (its "contribution", one flat vector);
  2. one merge (`merge_z`): z <- prox_g(mean of the contributions): the weights shrink by
     rho / (rho + l2), the biases are the plain mean;
  3. each worker (`update_dual`): u_i <- u_i + x_i - z.
Only contributions and z travel, so the sync rounds move ADMM like model averaging. `run_admm` is the
in-process reference the tests compare with the single-process optimum.
"""

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from faasgd.checks import positive_number, whole_number
from faasgd.lambdaml.convex import linear
from faasgd.errors import ConfigError


@dataclass(frozen=True)
class AdmmSettings:
    """A run's ADMM settings, checked when made (ConfigError naming the field)."""

    rho: float  # the penalty on x_i - z (> 0)
    local_steps: int  # gradient steps of each x-update (>= 1)
    lr: float  # their step size (> 0)
    l2: float = 0.0  # the regularisation on the weights (not the biases), applied in merge_z

    def __post_init__(self) -> None:
        check(rho=self.rho, local_steps=self.local_steps, lr=self.lr)
        linear.check_l2(self.l2)


def worker_update(model: ModuleType, x: np.ndarray, z: np.ndarray, u: np.ndarray, X, y, settings: AdmmSettings,
                  weight: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Return (new x_i, contribution x_i + u_i) after `settings.local_steps` gradient steps on the local problem."""
    rho, lr = settings.rho, settings.lr
    x = np.array(x, copy=True)
    for _ in range(settings.local_steps):
        _, grad = model.loss_and_grad(x, X, y)
        grad *= weight
        grad += rho * (x - z + u)
        x -= lr * grad
    return x, x + u


def merge_z(contributions, rho: float, l2: float = 0.0, n_features: int | None = None) -> np.ndarray:
    """Return z: the mean of the contributions, its weights (not the biases) shrunk by rho / (rho + l2).

    `n_features` tells where the biases start; it is required when l2 > 0.
    """
    contributions = list(contributions)
    if not contributions:
        raise ConfigError("contributions", "need at least one worker's x + u to merge")
    check(rho=rho)
    l2 = linear.check_l2(l2)
    z = np.mean(np.stack(contributions), axis=0, dtype=np.float64)
    if l2:
        if n_features is None:
            raise ConfigError("n_features", "is required to tell weights from biases when l2 > 0")
        W, _ = linear.split(z, n_features)
        W *= rho / (rho + l2)
    return z.astype(contributions[0].dtype)


def update_dual(u: np.ndarray, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Return the new scaled dual u_i + x_i - z."""
    return u + x - z


def run_admm(shards, model: ModuleType, rho: float, rounds: int, local_steps: int, lr: float,
             l2: float = 0.0, n_classes: int = 2) -> np.ndarray:
    """Return z after `rounds` ADMM rounds over `shards` [(X_i, y_i), ...] in this process (the reference)."""
    shards = list(shards)
    if not shards:
        raise ConfigError("shards", "need at least one (X, y) shard")
    check(rounds=rounds)
    n_features = linear.as_inputs(shards[0][0]).shape[1]
    sizes = np.array([linear.as_inputs(X).shape[0] for X, _ in shards], dtype=np.float64)
    weights = len(shards) * sizes / sizes.sum()
    z = model.init(n_features, n_classes)
    xs = [z.copy() for _ in shards]
    us = [np.zeros_like(z) for _ in shards]
    settings = AdmmSettings(rho, local_steps, lr)
    for _ in range(rounds):
        contributions = []
        for i, (X, y) in enumerate(shards):
            xs[i], contribution = worker_update(model, xs[i], z, us[i], X, y, settings, weights[i])
            contributions.append(contribution)
        z = merge_z(contributions, rho, l2, n_features)
        us = [update_dual(u, x, z) for u, x in zip(us, xs)]
    return z


def check(**values) -> None:
    """Raise ConfigError naming the first of rho, lr (> 0), local_steps, rounds (integers >= 1) out of range."""
    for field, value in values.items():
        if field in ("rho", "lr"):
            positive_number(value, field, must="a finite number > 0", numpy=True)
        else:
            whole_number(value, field, low=1, must="an integer of at least 1", numpy=True)

"""The seam between the workers and a network: one object per job, chosen from its config (job.network).

A Network holds what a worker needs and nothing of the store: its parameter count, a seeded
initial flat buffer, the loss with its gradient written into a flat buffer like the parameters, and
logits and accuracy for evaluation. The parameters are always one flat float32 buffer (float64 in
gradient checks): what the store holds, fetches, pushes and keeps as the job's model.

  MLP  the numpy multi-layer perceptron (mlp.py), exactly as the workers called it before;
  CNN  the convolutional networks (cnn.py), tf.keras imported only on their first gradient or logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from faasgd.model import layout, mlp


class Network(Protocol):
    """What a worker trains and evaluates through."""

    @property
    def param_count(self) -> int: ...

    def init_params(self, rng: np.random.Generator) -> np.ndarray: ...

    def loss_and_grads(self, flat: np.ndarray, x: np.ndarray, y: np.ndarray, rng: np.random.Generator | None = None,
                       out: mlp.GradOut | None = None) -> tuple[float, np.ndarray]:
        """(loss, the gradient; in `out.buffer`, times `out.scale`, when `out` is given)."""

    def accuracy(self, flat: np.ndarray, x: np.ndarray, y: np.ndarray) -> float: ...


@dataclass(frozen=True)
class MLP:
    """The numpy MLP of these layer sizes (also the linear models' (features, k) layout), hidden
    `activation` and inverted `dropout` (its masks drawn from the rng each call is given)."""

    sizes: tuple[int, ...]
    activation: str = "tanh"
    dropout: float = 0.0

    @property
    def param_count(self) -> int:
        return layout.param_count(self.sizes)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        return mlp.init_params(self.sizes, rng, self.activation)

    def loss_and_grads(self, flat, x, y, rng=None, out=None):
        return mlp.loss_and_grads(flat, self.sizes, x, y, self.activation, self.dropout, rng, out)

    def logits(self, flat: np.ndarray, x: np.ndarray) -> np.ndarray:
        return mlp.forward(flat, self.sizes, x, self.activation)

    def accuracy(self, flat, x, y) -> float:
        return mlp.accuracy(flat, self.sizes, x, y, self.activation)

"""How the store adds a push to a job's weights: its update rule, applied one chunk at a time.

Workers always push the same thing, d = -learning_rate x (the sum of their minibatch gradients since
their last push); the store applies it by the job's rule (config key `update_rule`):
  sum      w += d                                   Downpour as in Dean et al. 2012
  average  w += d / workers                         each push moves the model 1/workers as far
  adagrad  g = -d / lr;  G += g*g;  w += d / (sqrt(G) + eps)
           = w - lr * g / (sqrt(G) + eps)           Dean et al.'s server-side AdaGrad, per parameter
G, the sum of squared pushed gradients, lives IN THE SAME STORED ITEM as the weights it scales: an
adagrad chunk is [w | G] (float32 each), so the one transaction (Redis, memory) or cas (Memcached)
that adds a push to a chunk updates both at once, and push ids and Memcached's roll-forward work as
for the plain rules (each chunk receives each push once). A chunk of an adagrad job therefore holds
half as many weights (`width` 2): the stored item keeps the same size, below Memcached's 1 MB limit.
The rule is written with the job's weight layout (`w:meta`) at set_weights and never changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faasgd.checks import real_number, whole_number
from faasgd.errors import ConfigError

RULES = ("sum", "average", "adagrad")
# AdaGrad's eps, fixed (not a config key): small beside the sqrt(G) of any gradient that matters, large
# enough that a parameter whose first gradients are ~1e-7 (float32 noise) moves by a fraction of lr, not lr.
ADAGRAD_EPS = 1e-6
# G's starting value (Keras' and TensorFlow's initial_accumulator_value): with G = 0 the first push moves
# every weight with any gradient by lr x sign(g), which on dense inputs (the synthetic set) throws the
# network into saturation at any lr tried (0.01-0.05: 0.11-0.68 test accuracy where SGD reaches 0.92);
# from 0.1 the first steps are proportional to the gradient (about 3 x lr x g) and shrink from there.
ADAGRAD_G0 = 0.1


@dataclass(frozen=True)
class UpdateRule:
    """A job's update rule with what it needs to scale a push; stored in the job's weight meta."""

    name: str = "sum"  # sum | average | adagrad
    workers: int = 1  # average: pushes are divided by this (the job's number_of_workers)
    learning_rate: float = 0.0  # adagrad: the workers' step, to recover gradients from pushed deltas (> 0)
    eps: float = ADAGRAD_EPS  # adagrad: added to sqrt(G); recorded with the job so it never changes under it
    initial: float = ADAGRAD_G0  # adagrad: G's value before the first push, likewise recorded

    def __post_init__(self) -> None:
        if self.name not in RULES:
            raise ConfigError("update_rule", f"must be one of {', '.join(RULES)}, got {self.name!r}")
        whole_number(self.workers, "number_of_workers", low=1, must=f"an integer >= 1 for update rule {self.name}")
        for field, value in (("learning_rate", self.learning_rate), ("eps", self.eps), ("initial", self.initial)):
            real_number(value, field, low=0)
        if self.name == "adagrad" and not (self.learning_rate > 0 and self.eps > 0):
            raise ConfigError("learning_rate", f"update rule adagrad needs learning_rate > 0 (and eps > 0), "
                                               f"got {self.learning_rate!r}")

    @property
    def width(self) -> int:
        """float32 values stored per weight: 2 for adagrad ([w | G]), else 1."""
        return 2 if self.name == "adagrad" else 1

    def zero_state(self, weights: np.ndarray) -> np.ndarray:
        """A chunk as first stored: its weights and, for adagrad, G = 0."""
        if self.width == 1:
            return weights
        return np.concatenate([weights, np.full_like(weights, self.initial)])

    def apply(self, stored: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """A stored chunk (float32, `width` x len(delta) values) with the push's slice `delta` applied: a new array."""
        return self.apply_into(stored, delta, np.empty_like(stored))

    def apply_into(self, stored: np.ndarray, delta: np.ndarray, out: np.ndarray) -> np.ndarray:
        """`apply` written into `out` (float32, as long as `stored`, not overlapping it); `out`. sum and average
        allocate nothing: average divides the delta into `out` and adds the stored chunk there, the same float32
        roundings as `stored + delta / workers`."""
        if self.name == "sum":
            return np.add(stored, delta, out=out)
        if self.name == "average":
            np.divide(delta, np.float32(self.workers), out=out)
            return np.add(out, stored, out=out)
        out[:] = self._adagrad(stored, delta)
        return out

    def _adagrad(self, stored: np.ndarray, delta: np.ndarray) -> np.ndarray:
        n = delta.size
        weights, squares = stored[:n], stored[n:]
        gradient = delta / np.float32(-self.learning_rate)
        squares = squares + gradient * gradient
        return np.concatenate([weights + delta / (np.sqrt(squares) + np.float32(self.eps)), squares])

    def to_dict(self) -> dict:
        return {"name": self.name, "workers": self.workers, "learning_rate": self.learning_rate, "eps": self.eps,
                "initial": self.initial}

    @classmethod
    def from_dict(cls, data: dict | None) -> "UpdateRule":
        """The rule stored in a meta; none stored (a job written before rules existed) reads as sum."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValueError(f"update rule must be an object, got {data!r}")
        try:
            return cls(str(data["name"]), int(data.get("workers", 1)), float(data.get("learning_rate", 0.0)),
                       float(data.get("eps", ADAGRAD_EPS)), float(data.get("initial", 0.0)))
        except (KeyError, TypeError, ValueError, ConfigError) as e:
            raise ValueError(f"unreadable update rule {data!r}: {e}") from e


SUM = UpdateRule()

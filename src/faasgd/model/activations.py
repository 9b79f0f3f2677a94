"""Hidden-layer activations, applied in place, and their derivatives expressed from the outputs."""

import numpy as np

from faasgd.errors import ConfigError

ACTIVATIONS: tuple[str, ...] = ("tanh", "relu")


def check_activation(activation: str) -> None:
    """Raise ConfigError naming the field unless `activation` is one of ACTIVATIONS."""
    if activation not in ACTIVATIONS:
        raise ConfigError("activation", f"must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")


def activate(z: np.ndarray, activation: str) -> np.ndarray:
    """Overwrite pre-activations `z` with the activation's outputs and return `z`."""
    if activation == "tanh":
        return np.tanh(z, out=z)
    return np.maximum(z, 0, out=z)


def backprop_activation(delta: np.ndarray, a: np.ndarray, activation: str, scale: float = 1.0) -> None:
    """Multiply `delta` in place by the activation's derivative, given outputs `a` times `scale`.

    `scale` undoes inverted dropout's 1/keep on kept units (dropped units already have zero `delta`),
    so the derivative never needs the pre-dropout outputs kept apart.
    """
    if activation == "tanh":
        derivative = np.multiply(a, a)
        if scale != 1.0:
            derivative *= scale * scale
        np.subtract(1, derivative, out=derivative)
        delta *= derivative
    else:
        delta *= a > 0

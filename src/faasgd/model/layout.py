"""Layer sizes and the flat parameter layout: per layer, W (in, out) row-major, then b (out,)."""

from collections.abc import Sequence

import numpy as np

from faasgd.errors import ConfigError


def layer_sizes(input_dim: int, hidden_sizes: Sequence[int], n_classes: int) -> tuple[int, ...]:
    """Return the widths of every layer, input first and classes last, e.g. (784, 100, 10)."""
    if input_dim < 1:
        raise ConfigError("input_dim", f"must be at least 1, got {input_dim}")
    if n_classes < 2:
        raise ConfigError("n_classes", f"must be at least 2, got {n_classes}")
    hidden = tuple(int(h) for h in hidden_sizes)
    if any(h < 1 for h in hidden):
        raise ConfigError("hidden_sizes", f"every hidden layer needs at least 1 unit, got {hidden}")
    return (int(input_dim), *hidden, int(n_classes))


def param_count(sizes: Sequence[int]) -> int:
    """Return how many values the flat buffer of a network with these layer sizes holds."""
    return sum(n_in * n_out + n_out for n_in, n_out in zip(sizes[:-1], sizes[1:]))


def unflatten(flat: np.ndarray, sizes: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return [(W, b), ...] per layer as views into `flat`: writing through them changes `flat`."""
    check_flat(flat, sizes, "params")
    layers = []
    offset = 0
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        weights = flat[offset:offset + n_in * n_out].reshape(n_in, n_out)
        offset += n_in * n_out
        bias = flat[offset:offset + n_out]
        offset += n_out
        layers.append((weights, bias))
    return layers


def check_flat(flat: np.ndarray, sizes: Sequence[int], field: str) -> None:
    """Raise ConfigError unless `flat` is a contiguous 1-D float buffer of the right length."""
    if len(sizes) < 2:
        raise ConfigError("sizes", f"need at least an input and an output layer, got {tuple(sizes)}")
    if not isinstance(flat, np.ndarray) or flat.ndim != 1 or not flat.flags.c_contiguous:
        raise ConfigError(field, "must be a contiguous 1-D numpy array")
    if flat.dtype not in (np.float32, np.float64):
        raise ConfigError(field, f"must be float32 or float64, got {flat.dtype}")
    expected = param_count(sizes)
    if flat.size != expected:
        raise ConfigError(field, f"has {flat.size} values, layer sizes {tuple(sizes)} need {expected}")

"""A multi-layer perceptron as pure functions over one flat parameter buffer.

Hidden layers use tanh or relu, the output layer is linear and feeds a softmax cross-entropy loss
averaged over the batch. Every function works unchanged in float32 (training) and float64 (gradient
checks): computations follow the dtype of the parameter buffer.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from faasgd.errors import ConfigError, DataError
from faasgd.model.activations import activate, backprop_activation, check_activation
from faasgd.model.layout import check_flat, param_count, unflatten


def init_params(sizes: Sequence[int], rng: np.random.Generator, activation: str = "tanh") -> np.ndarray:
    """Return a fresh flat float32 buffer: Glorot-uniform weights for tanh, He-normal for relu, zero biases."""
    check_activation(activation)
    flat = np.zeros(param_count(sizes), dtype=np.float32)
    for weights, _ in unflatten(flat, sizes):
        fan_in, fan_out = weights.shape
        if activation == "tanh":
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            weights[...] = rng.uniform(-limit, limit, size=weights.shape)
        else:
            weights[...] = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=weights.shape)
    return flat


def forward(flat: np.ndarray, sizes: Sequence[int], x: np.ndarray, activation: str = "tanh") -> np.ndarray:
    """Return the logits (n, n_classes) of inputs `x` (n, input_dim), without dropout (evaluation)."""
    check_activation(activation)
    layers = unflatten(flat, sizes)
    h = as_inputs(x, sizes, flat.dtype)
    for weights, bias in layers[:-1]:
        h = h @ weights
        h += bias
        activate(h, activation)
    weights, bias = layers[-1]
    logits = h @ weights
    logits += bias
    return logits


@dataclass(frozen=True)
class GradOut:
    """Where loss_and_grads writes the gradient, and the factor it comes out times. A worker that steps in place
    builds one once: its gradient buffer and -learning_rate (the gradient then comes out as the step itself)."""

    buffer: np.ndarray  # like the parameters: their shape and dtype
    scale: float = 1.0


def loss_and_grads(
    flat: np.ndarray,
    sizes: Sequence[int],
    x: np.ndarray,
    y: np.ndarray,
    activation: str = "tanh",
    dropout: float = 0.0,
    rng: np.random.Generator | None = None,
    out: GradOut | None = None,
) -> tuple[float, np.ndarray]:
    """Return (mean softmax cross-entropy over the batch, its gradient as a flat buffer like `flat`).

    Hidden activations get inverted dropout (drop probability `dropout`, kept units scaled by
    1/(1 - dropout)); the backward pass reuses the forward pass's masks. `rng` draws the masks and is
    required when dropout > 0. With `out` the gradient is written into `out.buffer`, times `out.scale`
    (a worker's -learning_rate: the step itself): the output error is scaled before the backward pass,
    which is linear in it, so no pass over the parameters is spent on it.
    """
    check_activation(activation)
    check_dropout(dropout, rng)
    layers = unflatten(flat, sizes)
    grad, scale = (np.empty_like(flat), 1.0) if out is None else (grad_buffer(flat, sizes, out.buffer), out.scale)
    x = as_inputs(x, sizes, flat.dtype)
    y = as_labels(y, x.shape[0], sizes[-1])

    outputs, masks = hidden_forward(layers, x, activation, dropout, rng)
    weights, bias = layers[-1]
    logits = outputs[-1] @ weights
    logits += bias
    loss, delta = softmax_cross_entropy(logits, y, scale)
    backward(layers, unflatten(grad, sizes), outputs, masks, delta, activation, dropout)
    return loss, grad


def accuracy(
    flat: np.ndarray,
    sizes: Sequence[int],
    x: np.ndarray,
    y: np.ndarray,
    activation: str = "tanh",
    batch: int = 8192,
) -> float:
    """Return the fraction of rows whose largest logit is the label, evaluating `batch` rows at a time."""
    if batch < 1:
        raise ConfigError("batch", f"must be at least 1, got {batch}")
    y = np.asarray(y)
    if len(x) == 0 or len(x) != len(y):
        raise DataError(f"accuracy needs as many labels as rows and at least one row, got {len(x)} and {len(y)}")
    correct = 0
    for start in range(0, len(x), batch):
        logits = forward(flat, sizes, x[start:start + batch], activation)
        correct += int(np.count_nonzero(logits.argmax(axis=1) == y[start:start + batch]))
    return correct / len(x)


def hidden_forward(layers, x, activation, dropout, rng):
    """Return the input and every hidden layer's (dropped-out) outputs, and the dropout masks."""
    outputs = [x]
    masks = []
    scale = 1.0 / (1.0 - dropout)
    for weights, bias in layers[:-1]:
        h = outputs[-1] @ weights
        h += bias
        activate(h, activation)
        if dropout > 0:
            mask = rng.random(h.shape, dtype=h.dtype) >= dropout
            h *= mask
            h *= scale
            masks.append(mask)
        outputs.append(h)
    return outputs, masks


def softmax_cross_entropy(logits: np.ndarray, y: np.ndarray, scale: float = 1.0) -> tuple[float, np.ndarray]:
    """Return the mean loss and its gradient w.r.t. the logits (times `scale`); overwrites `logits` (stable: row
    max removed)."""
    rows = np.arange(len(y))
    logits -= logits.max(axis=1, keepdims=True)
    label_logits = logits[rows, y]
    probs = np.exp(logits, out=logits)
    totals = probs.sum(axis=1)
    loss = float(np.mean(np.log(totals) - label_logits))
    probs /= totals[:, None]
    probs[rows, y] -= 1
    probs *= scale / len(y)
    return loss, probs


def backward(layers, grads, outputs, masks, delta, activation, dropout) -> None:
    """Fill `grads` (views into the flat gradient) from the output error `delta`, last layer first."""
    scale = 1.0 / (1.0 - dropout)
    for index in range(len(layers) - 1, -1, -1):
        grad_w, grad_b = grads[index]
        np.matmul(outputs[index].T, delta, out=grad_w)
        np.sum(delta, axis=0, out=grad_b)
        if index == 0:
            break
        delta = delta @ layers[index][0].T
        if dropout > 0:
            delta *= masks[index - 1]
            delta *= scale
        backprop_activation(delta, outputs[index], activation, 1.0 / scale)


def check_dropout(dropout: float, rng: np.random.Generator | None) -> None:
    """Raise ConfigError unless 0 <= dropout < 1 and an rng is given when dropout > 0."""
    if not 0.0 <= dropout < 1.0:
        raise ConfigError("dropout", f"must be in [0, 1), got {dropout}")
    if dropout > 0 and rng is None:
        raise ConfigError("rng", "a numpy Generator is required when dropout > 0")


def grad_buffer(flat: np.ndarray, sizes: Sequence[int], buffer: np.ndarray) -> np.ndarray:
    """Return the gradient's `buffer` (GradOut.buffer) after checking it matches `flat`."""
    check_flat(buffer, sizes, "out")
    if buffer.dtype != flat.dtype:
        raise ConfigError("out", f"must have the parameters' dtype {flat.dtype}, got {buffer.dtype}")
    return buffer


def as_inputs(x: np.ndarray, sizes: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """Return `x` as a (n, input_dim) array of `dtype`, copying only when the dtype differs."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != sizes[0]:
        raise DataError(f"inputs must have shape (n, {sizes[0]}), got {x.shape}")
    return x.astype(dtype, copy=False)


def as_labels(y: np.ndarray, n: int, n_classes: int) -> np.ndarray:
    """Return `y` as n integer labels after checking each lies in [0, n_classes)."""
    y = np.asarray(y)
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
        raise DataError(f"labels must be {n} integers, got shape {y.shape} of {y.dtype}")
    if n == 0:
        raise DataError("a batch needs at least one row")
    if y.min() < 0 or y.max() >= n_classes:
        raise DataError(f"labels must lie in [0, {n_classes}), got {y.min()}..{y.max()}")
    return y

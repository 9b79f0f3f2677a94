"""The convolutional networks' architectures and their flat layout, in plain numpy (no TensorFlow here).

An architecture is a tuple of Layer specs over an image (height, width, channels). Its flat layout is,
layer by layer, the layer's Keras variables in Keras order, each row-major in Keras' shape:
  conv     kernel (k, k, in, filters), bias (filters,)
  dwconv   depthwise kernel (k, k, in, 1), bias (in,)
  dense    kernel (in, units), bias (units,)
  pool, gap, flatten: no parameters (2x2 max pooling, global average pooling, flattening).
So the job's weights can be created, counted and initialised (create_job, admission) where TensorFlow is
not installed; only the gradients and the logits need it (cnn_keras.py). tests/unit/model/test_cnn_model.py
holds the layout to the Keras model's variables.

The two architectures (28x28x1 Fashion-MNIST / EMNIST images, ReLU everywhere but the linear output):
  lenet      conv 16 5x5 same, pool, conv 32 5x5 valid, pool, flatten, dense 128, dense classes
             (LeCun et al. 1998's shape, wider, with ReLU and max pooling: 117,066 parameters for 10 classes;
             decided: LeNet-5's own 6 and 16 filters plateau below 0.90 test accuracy on Fashion-MNIST with
             plain SGD, bench/peers.py's target)
  mobilenet  conv 16 3x3 stride 2, then depthwise separable blocks (a 3x3 depthwise conv and a 1x1
             pointwise conv) of 32, 64 (stride 2) and 64 channels, global average pooling, dense classes
             (MobileNet v1's block without batch normalisation: no state beside the flat buffer)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from faasgd.errors import ConfigError

ARCHS: tuple[str, ...] = ("lenet", "mobilenet")
KINDS = ("conv", "dwconv", "dense", "pool", "gap", "flatten")


@dataclass(frozen=True)
class Layer:
    """One layer: its kind, output channels or units (`size`; dwconv keeps its input's), kernel, stride, padding."""

    kind: str
    size: int = 0
    kernel: int = 1
    stride: int = 1
    padding: str = "same"  # same | valid (Keras' meaning)
    relu: bool = True  # ReLU after the layer (the last dense layer is linear: the logits)


def architecture(arch: str, n_classes: int) -> tuple[Layer, ...]:
    """The layers of architecture `arch`, ending in `n_classes` logits; ConfigError naming cnn_arch if unknown."""
    if arch == "lenet":
        return (Layer("conv", 16, 5), Layer("pool"), Layer("conv", 32, 5, padding="valid"), Layer("pool"),
                Layer("flatten"), Layer("dense", 128), Layer("dense", n_classes, relu=False))
    if arch == "mobilenet":
        return (Layer("conv", 16, 3, stride=2),
                Layer("dwconv", kernel=3), Layer("conv", 32),
                Layer("dwconv", kernel=3, stride=2), Layer("conv", 64),
                Layer("dwconv", kernel=3), Layer("conv", 64),
                Layer("gap"), Layer("dense", n_classes, relu=False))
    raise ConfigError("cnn_arch", f"must be one of {', '.join(ARCHS)}, got {arch!r}")


def image_shape(input_dim: int) -> tuple[int, int, int]:
    """The (height, width, channels) of a flattened square grey image of `input_dim` pixels."""
    side = math.isqrt(input_dim)
    if side * side != input_dim or side < 4:
        raise ConfigError("dataset", f"the cnn takes square images of at least 4x4 pixels; {input_dim} inputs are not")
    return side, side, 1


def variable_shapes(layers: tuple[Layer, ...], image: tuple[int, int, int]) -> list[tuple[int, ...]]:
    """The shapes of every variable in flat order; ConfigError naming cnn_arch if the image is too small."""
    h, w, c = image
    flat_features = None  # set once the feature map is flattened or pooled away
    shapes: list[tuple[int, ...]] = []
    for layer in layers:
        if layer.kind not in KINDS:
            raise ConfigError("cnn_arch", f"unknown layer kind {layer.kind!r}")
        if layer.kind in ("conv", "dwconv"):
            out = c if layer.kind == "dwconv" else layer.size
            shapes += [(layer.kernel, layer.kernel, c, 1 if layer.kind == "dwconv" else out), (out,)]
            h, w, c = spatial(h, layer), spatial(w, layer), out
        elif layer.kind == "pool":
            h, w = h // 2, w // 2
        elif layer.kind in ("gap", "flatten"):
            flat_features = c if layer.kind == "gap" else h * w * c
        else:
            n_in = flat_features if flat_features is not None else c
            shapes += [(n_in, layer.size), (layer.size,)]
            flat_features = layer.size
        if h < 1 or w < 1:
            raise ConfigError("cnn_arch", f"the image {image} is too small for these layers: a feature map vanished")
    return shapes


def param_count(shapes: list[tuple[int, ...]]) -> int:
    """How many values the flat buffer of these variables holds."""
    return sum(math.prod(shape) for shape in shapes)


def unflatten(flat: np.ndarray, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Every variable as a view into `flat` (writing through one changes `flat`)."""
    if flat.ndim != 1 or flat.size != param_count(shapes):
        raise ConfigError("params", f"must be a flat buffer of {param_count(shapes)} values, got shape {flat.shape}")
    views, offset = [], 0
    for shape in shapes:
        n = math.prod(shape)
        views.append(flat[offset:offset + n].reshape(shape))
        offset += n
    return views


def init_params(shapes: list[tuple[int, ...]], rng: np.random.Generator, dtype=np.float32) -> np.ndarray:
    """A fresh flat buffer: He-uniform kernels (ReLU), zero biases; the fans as Keras computes them."""
    flat = np.zeros(param_count(shapes), dtype)
    for view in unflatten(flat, shapes):
        if view.ndim == 1:
            continue  # a bias
        receptive = math.prod(view.shape[:-2])
        fan_in = view.shape[-2] * receptive
        limit = math.sqrt(6.0 / fan_in)
        view[...] = rng.uniform(-limit, limit, size=view.shape)
    return flat


def spatial(n: int, layer: Layer) -> int:
    """A conv layer's output length along one axis (Keras: same pads to ceil(n / s), valid does not pad)."""
    if layer.padding == "same":
        return -(-n // layer.stride)
    return (n - layer.kernel) // layer.stride + 1

"""A convolutional network (`model: cnn`) behind the same seam as the MLP (network.py).

Its layout and seeded initialisation are numpy (cnn_layout.py), so a job is created and sized where
TensorFlow is absent; the loss, the flat gradient and the logits come from tf.keras (cnn_keras.py),
imported on the first of those calls. Inputs arrive as the MLP's: (n, pixels) float32 rows scaled from
the uint8 shards; they are seen as (n, h, w, 1) images without a copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from faasgd.errors import ConfigError, DataError
from faasgd.model import cnn_layout
from faasgd.model.cnn_layout import Layer


@dataclass(frozen=True)
class CNN:
    """The network of `layers` over (h, w, c) images with `n_classes` logits."""

    layers: tuple[Layer, ...]
    image: tuple[int, int, int]
    shapes: list = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "shapes", cnn_layout.variable_shapes(self.layers, self.image))

    @classmethod
    def of(cls, arch: str, input_dim: int, n_classes: int) -> "CNN":
        """The architecture `arch` (cnn_layout.ARCHS) for square grey images of `input_dim` pixels."""
        return cls(cnn_layout.architecture(arch, n_classes), cnn_layout.image_shape(input_dim))

    @property
    def param_count(self) -> int:
        return cnn_layout.param_count(self.shapes)

    def init_params(self, rng: np.random.Generator, dtype=np.float32) -> np.ndarray:
        return cnn_layout.init_params(self.shapes, rng, dtype)

    def loss_and_grads(self, flat, x, y, rng=None, out=None):
        """(mean softmax cross-entropy, its gradient as a flat buffer like `flat`; in `out.buffer`, times
        `out.scale`, when `out` (a GradOut) is given). `rng` is unused: the cnn has no dropout (config refuses it)."""
        keras = _keras()
        grad, scale = (np.empty_like(flat), 1.0) if out is None else (out.buffer, out.scale)
        if grad.shape != flat.shape or grad.dtype != flat.dtype:
            raise ConfigError("out", f"must be {flat.dtype} {flat.shape} like the parameters, got "
                                          f"{grad.dtype} {grad.shape}")
        loss = keras.loss_and_grads(self._compiled(keras, flat), flat, self.images(x, flat.dtype), y, grad)
        if scale != 1.0:
            np.multiply(grad, scale, out=grad)
        return loss, grad

    def logits(self, flat: np.ndarray, x: np.ndarray) -> np.ndarray:
        keras = _keras()
        return keras.logits(self._compiled(keras, flat), flat, self.images(x, flat.dtype))

    def accuracy(self, flat, x, y) -> float:
        y = np.asarray(y)
        if len(x) == 0 or len(x) != len(y):
            raise DataError(f"accuracy needs as many labels as rows and at least one row, got {len(x)} and {len(y)}")
        return float(np.count_nonzero(self.logits(flat, x).argmax(axis=1) == y)) / len(y)

    def keras_model(self, flat: np.ndarray):
        """A tf.keras model of this network holding `flat`'s weights (to save or serve it with Keras)."""
        keras = _keras()
        return keras.to_keras(self._compiled(keras, flat), cnn_layout.unflatten(flat, self.shapes))

    def flat_from_keras(self, keras_model, dtype=np.float32) -> np.ndarray:
        """The flat buffer of a Keras model of this network (keras_model's inverse: exact)."""
        flat = np.empty(self.param_count, dtype)
        for view, value in zip(cnn_layout.unflatten(flat, self.shapes), _keras().weights_of(keras_model), strict=True):
            view[...] = value
        return flat

    def images(self, x: np.ndarray, dtype) -> np.ndarray:
        """Rows (n, h*w*c) as images (n, h, w, c) of `dtype` (a view when the dtype is already right)."""
        x = np.asarray(x)
        pixels = int(np.prod(self.image))
        if x.ndim != 2 or x.shape[1] != pixels:
            raise DataError(f"inputs must have shape (n, {pixels}), got {x.shape}")
        return np.ascontiguousarray(x, dtype).reshape(-1, *self.image)

    def _compiled(self, keras, flat: np.ndarray):
        if flat.ndim != 1 or flat.size != self.param_count:
            raise ConfigError("params", f"must be a flat buffer of {self.param_count} values, got shape {flat.shape}")
        return keras.compiled(self.layers, self.image, self.shapes, flat.dtype)


def _keras():
    """cnn_keras, imported now (TensorFlow is only loaded by a job whose model is cnn)."""
    try:
        from faasgd.model import cnn_keras
    except ImportError as error:
        raise ConfigError("model", f"cnn needs TensorFlow, which this installation lacks ({error}): "
                                   "pip install 'faasgd[tf]', or build the function with FAASGD_EXTRAS=tf") from None
    return cnn_keras

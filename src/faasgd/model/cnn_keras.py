"""The convolutional networks' forward pass and gradients with tf.keras and GradientTape (extra `tf`).

Imported only when a job's model is cnn (cnn.py imports this module on the first gradient or logits):
the core without TensorFlow still creates, counts and trains the MLP.

The flat buffer is the authority. Each architecture is built once per process as a Keras model
(`compiled`, cached by layers, image and dtype); its own variables are never read or written
while training. Every call hands the flat buffer in as one tensor: a tf.function splits it into
the variables' shapes (views in cnn_layout's order) and runs the model with
`stateless_call(those tensors)`, so no weight is copied into Keras, nothing is assigned per fetch
or per step, and calls from several threads (workers sharing a process) share the one model
safely. GradientTape watches the flat tensor itself, so the gradient comes out flat too
(tf.split's gradient is a concat) and is copied once into the worker's gradient buffer.

Threads: TensorFlow's intra- and inter-op pools are set to one thread each, before the runtime starts.
Decided: a worker is one process per core on the 2-core machines this runs on (two workers, or a
worker beside the store), as the MLP's BLAS runs one thread (threadpoolctl); a second TF pool would
only make two workers preempt each other. A process that imported TensorFlow before keeps its own.
"""

from __future__ import annotations

import os
import threading

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # most of TensorFlow's C++ notices are not a worker's log
import tensorflow as tf  # noqa: E402

from faasgd.model.cnn_layout import Layer, param_count  # noqa: E402

try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
except RuntimeError:  # the runtime has started already (TensorFlow was in use before): keep its pools
    pass

_built: dict[tuple, "Compiled"] = {}
_lock = threading.Lock()


class Compiled:
    """One architecture's Keras model and its two tf.functions: loss and flat gradient; logits."""

    def __init__(self, layers: tuple[Layer, ...], image: tuple[int, int, int], shapes, dtype: np.dtype):
        self.net = keras_model(layers, image, dtype)
        keras_shapes = [tuple(v.shape) for v in self.net.trainable_variables]
        if keras_shapes != [tuple(s) for s in shapes]:  # cnn_layout must describe exactly what Keras builds
            raise RuntimeError(f"the flat layout {shapes} is not the Keras model's {keras_shapes}")
        counts = [int(np.prod(s)) for s in shapes]
        tf_dtype = tf.as_dtype(dtype)
        flat_spec = tf.TensorSpec([param_count(shapes)], tf_dtype)
        x_spec = tf.TensorSpec([None, *image], tf_dtype)
        net = self.net

        def weights(flat):
            return [tf.reshape(part, shape) for part, shape in zip(tf.split(flat, counts), shapes)]

        @tf.function(input_signature=[flat_spec, x_spec, tf.TensorSpec([None], tf.int32)], jit_compile=False)
        def loss_and_grad(flat, x, y):
            with tf.GradientTape() as tape:
                tape.watch(flat)
                logits, _ = net.stateless_call(weights(flat), [], x, training=True)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            return loss, tape.gradient(loss, flat)

        @tf.function(input_signature=[flat_spec, x_spec])
        def logits(flat, x):
            return net.stateless_call(weights(flat), [], x, training=False)[0]

        self.loss_and_grad, self.logits = loss_and_grad, logits


def compiled(layers: tuple[Layer, ...], image: tuple[int, int, int], shapes, dtype) -> Compiled:
    """The process's one Compiled of this architecture, image and dtype (built on first use)."""
    key = (layers, image, np.dtype(dtype).str)
    with _lock:
        if key not in _built:
            _built[key] = Compiled(layers, image, shapes, np.dtype(dtype))
        return _built[key]


def keras_model(layers: tuple[Layer, ...], image: tuple[int, int, int], dtype: np.dtype):
    """The tf.keras Sequential model of `layers` (variables in cnn_layout's order and shapes)."""
    keras, name = tf.keras, np.dtype(dtype).name
    built = [keras.Input(image, dtype=name)]
    for layer in layers:
        act = "relu" if layer.relu else None
        if layer.kind == "conv":
            built.append(keras.layers.Conv2D(layer.size, layer.kernel, strides=layer.stride, padding=layer.padding,
                                             activation=act, dtype=name))
        elif layer.kind == "dwconv":
            built.append(keras.layers.DepthwiseConv2D(layer.kernel, strides=layer.stride, padding=layer.padding,
                                                      activation=act, dtype=name))
        elif layer.kind == "dense":
            built.append(keras.layers.Dense(layer.size, activation=act, dtype=name))
        elif layer.kind == "pool":
            built.append(keras.layers.MaxPooling2D(2, dtype=name))
        elif layer.kind == "gap":
            built.append(keras.layers.GlobalAveragePooling2D(dtype=name))
        else:
            built.append(keras.layers.Flatten(dtype=name))
    return keras.Sequential(built)


def loss_and_grads(model: Compiled, flat: np.ndarray, x: np.ndarray, y: np.ndarray,
                   grad_out: np.ndarray) -> float:
    """Write the flat gradient of the mean softmax cross-entropy into `grad_out`; return the loss."""
    loss, grad = model.loss_and_grad(flat, x, np.asarray(y, np.int32))
    grad_out[...] = grad.numpy()
    return float(loss)


def logits(model: Compiled, flat: np.ndarray, x: np.ndarray) -> np.ndarray:
    return model.logits(flat, x).numpy()


def to_keras(model: Compiled, views: list[np.ndarray]):
    """A new Keras model of the architecture whose variables hold these weights (an export, never used in training)."""
    net = tf.keras.models.clone_model(model.net)
    net.set_weights(views)
    return net


def weights_of(net) -> list[np.ndarray]:
    """A Keras model's trainable variables as numpy arrays, in flat order."""
    return [v.numpy() for v in net.trainable_variables]

"""The networks over one flat parameter buffer: the numpy MLP (layout, init, forward, loss and gradients,
accuracy) and, behind the same seam (network.py), the tf.keras convolutional networks (cnn.py)."""

from faasgd.model.activations import ACTIVATIONS
from faasgd.model.cnn import CNN
from faasgd.model.cnn_layout import ARCHS
from faasgd.model.layout import layer_sizes, param_count, unflatten
from faasgd.model.mlp import GradOut, accuracy, forward, init_params, loss_and_grads
from faasgd.model.network import MLP, Network

__all__ = [
    "ACTIVATIONS",
    "ARCHS",
    "CNN",
    "GradOut",
    "MLP",
    "Network",
    "accuracy",
    "forward",
    "init_params",
    "layer_sizes",
    "loss_and_grads",
    "param_count",
    "unflatten",
]

"""Numpy MLP over one flat parameter buffer: layout, initialisation, forward, loss and gradients, accuracy."""

from faasgd.model.activations import ACTIVATIONS
from faasgd.model.layout import layer_sizes, param_count, unflatten
from faasgd.model.mlp import accuracy, forward, init_params, loss_and_grads

__all__ = [
    "ACTIVATIONS",
    "accuracy",
    "forward",
    "init_params",
    "layer_sizes",
    "loss_and_grads",
    "param_count",
    "unflatten",
]

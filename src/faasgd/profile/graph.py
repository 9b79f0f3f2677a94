"""A job's network as a computation graph, and its setting's features: the inputs of the graph inspector.

Driple reads a training job's computation graph (TensorFlow's ops) with a GNN. Ours is read from the layout
the job's model is built from, with no TensorFlow: the MLP's layer sizes (faasgd.job.network_sizes) and the
cnn's layers (faasgd.model.cnn_layout.architecture), so a network never run can be described.

    graph = job_graph(config)           # Graph(nodes, edges, setting)
    x, adjacency = graph.matrices()     # node features (n, NODE_FEATURES), adjacency with self-loops (n, n)

Nodes, in data-flow order (the edges join each node to the next: both networks are chains):
    input            the sample (shape: the features or the image)
    dense            kernel (in, units) and bias: params in*units + units, FLOPs 2*in*units per sample
    conv / dwconv    kernel k x k over the feature map: params as cnn_layout's, FLOPs 2 * (out h*w) * k*k * in
                     * out channels per sample (dwconv: one filter per channel, 2 * h*w * k*k * channels)
    pool / gap / flatten   no parameters; FLOPs one per input value (pool, gap), 0 (flatten)
    activation       the hidden layers' non-linearity (tanh, relu, ...): one FLOP per value
    loss             softmax cross-entropy over the classes: 3 FLOPs per class
A node's features (NODE_FEATURES): the one-hot of its op (OPS), log1p of its parameters, of its FLOPs per sample
and of its output's size. FLOPs count multiply-adds as two, forward only (training is ~3x, for every node alike).

The setting's features (SETTING_FEATURES), what the job runs with beside the network: log workers, log n_fetch,
log n_push, log batch size, one-hots of the store (redis, memcached), the invocation mode and the push codec's
kind (f32, f16, topk), and topk's fraction (0 otherwise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from faasgd import job
from faasgd.config import TrainConfig
from faasgd.model import cnn_layout

OPS = ("input", "dense", "conv", "dwconv", "pool", "gap", "flatten", "activation", "loss")
NODE_FEATURES = len(OPS) + 3
STORES = ("redis", "memcached")
MODES = ("loop", "per-iteration", "single")
CODECS = ("f32", "f16", "topk")
SETTING_NAMES = (("log_workers", "log_n_fetch", "log_n_push", "log_batch_size")
                 + tuple(f"store_{s}" for s in STORES) + tuple(f"mode_{m}" for m in MODES)
                 + tuple(f"codec_{c}" for c in CODECS) + ("topk_fraction",))
SETTING_FEATURES = len(SETTING_NAMES)


@dataclass(frozen=True)
class Node:
    """One op of the graph: its type, output shape (per sample), parameters and forward FLOPs per sample."""

    op: str
    shape: tuple[int, ...]
    params: int = 0
    flops: int = 0

    def features(self) -> list[float]:
        onehot = [1.0 if self.op == o else 0.0 for o in OPS]
        return onehot + [math.log1p(self.params), math.log1p(self.flops), math.log1p(math.prod(self.shape))]


@dataclass(frozen=True)
class Graph:
    """A network's nodes, its edges (source, destination) in data-flow order, and the setting it runs in."""

    nodes: tuple[Node, ...]
    edges: tuple[tuple[int, int], ...]
    setting: dict[str, float] = field(default_factory=dict)

    @property
    def params(self) -> int:
        return sum(n.params for n in self.nodes)

    @property
    def flops(self) -> int:
        return sum(n.flops for n in self.nodes)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Node features (n, NODE_FEATURES) and the adjacency (n, n): the edges both ways, plus self-loops."""
        x = np.array([n.features() for n in self.nodes], dtype=np.float64)
        adjacency = np.eye(len(self.nodes))
        for a, b in self.edges:
            adjacency[a, b] = adjacency[b, a] = 1.0
        return x, adjacency

    def setting_vector(self) -> np.ndarray:
        return np.array([self.setting[name] for name in SETTING_NAMES], dtype=np.float64)


def chain(nodes: list[Node], setting: dict[str, float] | None = None) -> Graph:
    return Graph(tuple(nodes), tuple((i, i + 1) for i in range(len(nodes) - 1)), setting or {})


def mlp_graph(sizes: tuple[int, ...]) -> list[Node]:
    """The nodes of an MLP of layer sizes (input, hidden..., classes): dense and activation per hidden layer,
    a last dense layer (the logits) and the loss."""
    nodes = [Node("input", (sizes[0],))]
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        nodes.append(Node("dense", (n_out,), n_in * n_out + n_out, 2 * n_in * n_out))
        if i < len(sizes) - 2:
            nodes.append(Node("activation", (n_out,), 0, n_out))
    nodes.append(Node("loss", (sizes[-1],), 0, 3 * sizes[-1]))
    return nodes


def cnn_graph(layers: tuple[cnn_layout.Layer, ...], image: tuple[int, int, int]) -> list[Node]:
    """The nodes of a cnn's layers over an image (height, width, channels); shapes as cnn_layout computes them
    (variable_shapes checks the layers first: a ConfigError naming cnn_arch when a feature map vanishes)."""
    cnn_layout.variable_shapes(layers, image)
    h, w, c = image
    flat: int | None = None
    nodes = [Node("input", image)]
    for layer in layers:
        if layer.kind in ("conv", "dwconv"):
            out = c if layer.kind == "dwconv" else layer.size
            oh, ow = cnn_layout.spatial(h, layer), cnn_layout.spatial(w, layer)
            per_position = layer.kernel * layer.kernel * c * (1 if layer.kind == "dwconv" else out)
            nodes.append(Node(layer.kind, (oh, ow, out), per_position + out, 2 * oh * ow * per_position))
            h, w, c = oh, ow, out
        elif layer.kind == "pool":
            nodes.append(Node("pool", (h // 2, w // 2, c), 0, h * w * c))
            h, w = h // 2, w // 2
        elif layer.kind in ("gap", "flatten"):
            flat = c if layer.kind == "gap" else h * w * c
            nodes.append(Node(layer.kind, (flat,), 0, h * w * c if layer.kind == "gap" else 0))
        else:
            n_in = flat if flat is not None else c
            nodes.append(Node("dense", (layer.size,), n_in * layer.size + layer.size, 2 * n_in * layer.size))
            flat = layer.size
        if layer.relu and layer.kind in ("conv", "dwconv", "dense"):
            nodes.append(Node("activation", nodes[-1].shape, 0, math.prod(nodes[-1].shape)))
    nodes.append(Node("loss", nodes[-1].shape, 0, 3 * math.prod(nodes[-1].shape)))
    return nodes


def store_kind(config: TrainConfig) -> str:
    """redis or memcached: the config's store name when it is one, else its store_url's scheme."""
    if config.store in STORES:
        return config.store
    return "memcached" if config.store_url.startswith("memcached") else "redis"


def setting(config: TrainConfig) -> dict[str, float]:
    """The setting's features (SETTING_NAMES) of a job's config."""
    codec = config.push_codec.split(":", 1)
    kind = "topk" if codec[0] == "topk" else codec[0]
    out = {"log_workers": math.log(config.number_of_workers), "log_n_fetch": math.log(config.n_fetch),
           "log_n_push": math.log(config.n_push), "log_batch_size": math.log(config.batch_size),
           "topk_fraction": float(codec[1]) if kind == "topk" else 0.0}
    out.update({f"store_{s}": float(store_kind(config) == s) for s in STORES})
    out.update({f"mode_{m}": float(config.invocation_mode == m) for m in MODES})
    out.update({f"codec_{c}": float(kind == c) for c in CODECS})
    return out


def job_graph(config: TrainConfig) -> Graph:
    """The graph of a job's network (the cnn's layers for model cnn, else the MLP's or a linear model's sizes:
    a linear model is an MLP without hidden layers) with its setting."""
    sizes = job.network_sizes(config)
    if config.model == "cnn":
        layers = cnn_layout.architecture(config.cnn_arch, sizes[-1])
        nodes = cnn_graph(layers, cnn_layout.image_shape(sizes[0]))
    else:
        nodes = mlp_graph(sizes)
    return chain(nodes, setting(config))

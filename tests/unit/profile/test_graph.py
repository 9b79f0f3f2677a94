"""The inspector's graphs: a job's network as nodes and data-flow edges, counted as the model counts itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from faasgd import model
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError
from faasgd.model import cnn_layout
from faasgd.profile.graph import NODE_FEATURES, OPS, SETTING_FEATURES, cnn_graph, job_graph, mlp_graph


def test_an_mlps_graph_counts_the_parameters_the_model_holds():
    config = TrainConfig(dataset="fashion-mnist", hidden_sizes=(64, 32))
    graph = job_graph(config)
    assert [n.op for n in graph.nodes] == ["input", "dense", "activation", "dense", "activation", "dense", "loss"]
    assert graph.params == model.param_count((784, 64, 32, 10))
    assert graph.nodes[1].flops == 2 * 784 * 64 and graph.nodes[1].shape == (64,)
    assert graph.edges == tuple((i, i + 1) for i in range(6))


@pytest.mark.parametrize("arch", cnn_layout.ARCHS)
def test_a_cnns_graph_counts_the_parameters_of_its_layout(arch):
    graph = job_graph(TrainConfig(dataset="fashion-mnist", model="cnn", cnn_arch=arch))
    assert graph.params == model.CNN.of(arch, 784, 10).param_count
    assert graph.nodes[-1].op == "loss" and graph.nodes[-1].shape == (10,)


def test_a_convolutions_flops_are_its_output_positions_times_its_kernel():
    nodes = cnn_graph((cnn_layout.Layer("conv", 8, 3), cnn_layout.Layer("gap"),
                       cnn_layout.Layer("dense", 4, relu=False)), (6, 6, 2))
    conv = nodes[1]
    assert conv.shape == (6, 6, 8) and conv.params == 3 * 3 * 2 * 8 + 8
    assert conv.flops == 2 * 36 * (3 * 3 * 2 * 8)
    assert [n.op for n in nodes] == ["input", "conv", "activation", "gap", "dense", "loss"]


def test_a_cnn_too_deep_for_its_image_is_refused_naming_cnn_arch():
    layers = (cnn_layout.Layer("conv", 4, 3, stride=2),) * 4 + (cnn_layout.Layer("pool"),) * 3
    with pytest.raises(ConfigError) as caught:
        cnn_graph(layers, (8, 8, 1))
    assert caught.value.field == "cnn_arch"


def test_the_matrices_hold_one_row_per_node_and_symmetric_edges_with_self_loops():
    graph = job_graph(TrainConfig(dataset="synthetic", hidden_sizes=(16,)))
    x, adjacency = graph.matrices()
    assert x.shape == (5, NODE_FEATURES) and adjacency.shape == (5, 5)
    assert np.array_equal(adjacency, adjacency.T) and np.all(np.diag(adjacency) == 1)
    assert adjacency[0, 2] == 0 and adjacency[1, 2] == 1
    assert x[1, OPS.index("dense")] == 1 and x[1, len(OPS)] == pytest.approx(math.log1p(graph.nodes[1].params))
    assert graph.nodes[1].params == mlp_graph((graph.nodes[0].shape[0], 16, 2))[1].params


def test_the_setting_names_workers_store_mode_and_codec():
    redis = job_graph(TrainConfig(dataset="synthetic", number_of_workers=4, n_fetch=5)).setting
    memcached = job_graph(TrainConfig(dataset="synthetic", store_url="memcached://127.0.0.1:11211",
                                      push_codec="topk:0.1", invocation_mode="per-iteration")).setting
    assert len(redis) == SETTING_FEATURES
    assert redis["log_workers"] == pytest.approx(math.log(4)) and redis["log_n_fetch"] == pytest.approx(math.log(5))
    assert redis["store_redis"] == 1 and memcached["store_memcached"] == 1 and memcached["store_redis"] == 0
    assert memcached["codec_topk"] == 1 and memcached["topk_fraction"] == pytest.approx(0.1)
    assert memcached["mode_per-iteration"] == 1 and redis["mode_loop"] == 1

"""The graph inspector's GCN on runs with a known law of the graph: it learns held-out architectures, leaves out
missing figures, and fine-tuning moves it to a new setting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from faasgd.cli.graph_model import GraphModel
from faasgd.cli.predictor import mape
from faasgd.config import TrainConfig
from faasgd.profile.figures import DRIPLE
from faasgd.profile.graph import job_graph


def runs_of(archs, store="redis", scale=1.0):
    """One run per architecture; every figure a law of the graph (depth, parameters) and the store."""
    out = []
    for arch in archs:
        config = TrainConfig(dataset="synthetic", hidden_sizes=arch,
                             store_url="memcached://127.0.0.1:11211" if store == "memcached" else "redis://x:6379/0")
        graph = job_graph(config)
        law = scale * math.sqrt(graph.params) * (1 + 0.2 * len(arch))
        figures = {t: law * (i + 1) for i, t in enumerate(DRIPLE)}
        figures["rss_idle_s"] = None  # never measured: out of that figure's loss
        out.append({**config.to_dict(), **figures, "state": "done"})
    return out


def architectures(n, seed):
    rng = np.random.default_rng(seed)
    return [tuple(int(w) for w in rng.choice([8, 16, 32, 64, 128], size=rng.integers(1, 6))) for _ in range(n)]


def score(model, runs):
    predicted = model.predict(runs)
    return mape([(predicted[t][i], r[t]) for t in DRIPLE for i, r in enumerate(runs) if r[t]])


def test_held_out_architectures_are_learnt_from_their_graphs():
    model = GraphModel.fit(runs_of(architectures(40, 0)), members=1)
    held = runs_of(architectures(10, 1))
    assert score(model, held) < 25.0
    assert np.all(np.isfinite(model.predict(held)["tx_burst_use"]))


def test_fine_tuning_on_a_few_runs_of_a_new_setting_beats_the_source_as_it_is():
    source = GraphModel.fit(runs_of(architectures(30, 0)), members=1)
    new = runs_of(architectures(16, 2), store="memcached", scale=3.0)
    before = score(source, new[4:])
    after = score(source.fine_tune(new[:4]), new[4:])
    assert after < before / 2, (before, after)


def test_the_ensembles_members_differ_and_their_mean_is_predicted():
    runs = runs_of(architectures(12, 0))
    model = GraphModel.fit(runs, members=2, epochs=20)
    one = [GraphModel([net], model.scales).log_predict(runs[:2]) for net in model.nets]
    assert not np.allclose(one[0], one[1])
    assert model.log_predict(runs[:2]) == pytest.approx((one[0] + one[1]) / 2, rel=1e-5)

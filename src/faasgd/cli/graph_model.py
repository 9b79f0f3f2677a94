"""Driple's inspector: a graph convolutional network predicting a job's 12 resource figures from its graph.

    model = GraphModel.fit(runs)                     # run records: config keys and figures at the top level
    model.predict(runs)                              # {figure: array of predictions}, NaN where none
    tuned = model.fine_tune(few_runs_of_a_new_setting)   # transfer learning: every weight, from the source's

Inputs: each run's graph and setting (faasgd.profile.graph: node features, adjacency, setting features). The
network (Kipf & Welling's GCN, Driple's best) in plain PyTorch, on graphs padded to the batch's largest:
    H1 = relu(Â X W1), H2 = relu(Â H1 W2),   Â = D^-1/2 (A + I) D^-1/2 over the graph's own nodes
    readout = [mean of H2 over the nodes, max of H2 over the nodes, relu(S Ws)]   (S: the setting's features)
    out = W4 relu(W3 readout)                                                   (one output per figure)
Targets: the log of each of the 12 Driple figures (faasgd.profile.figures.DRIPLE), standardised per figure on the
training runs; a run without a figure (no idle period, no burst) is left out of that figure's loss (masked), as the
ridge leaves it out of that figure's fit (cli/predictor.py's target_value decides what is a value). Features are
standardised with the training runs' means and spreads; fine-tuning keeps the source's (the new setting's few runs
cannot estimate them). Full-batch Adam, a fixed number of epochs (EPOCHS; FINE_TUNE_EPOCHS at a tenth of the rate
for transfer); ENSEMBLE networks from different seeds, their log predictions averaged. One CPU thread: the machine
is shared, and graphs of a dozen nodes gain nothing from more.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from faasgd.cli.predictor import CONFIG_KEYS, target_value
from faasgd.config import config_from_record
from faasgd.profile.figures import DRIPLE
from faasgd.profile.graph import job_graph

HIDDEN = 32
EPOCHS = 400
FINE_TUNE_EPOCHS = 200
RATE = 0.01
WEIGHT_DECAY = 1e-4
ENSEMBLE = 3


def encode(runs: list[dict]) -> tuple[list, np.ndarray]:
    """Each run's (node features, adjacency, setting vector), and its targets' logs (runs, 12; NaN: none)."""
    graphs, targets = [], []
    for run in runs:
        graph = job_graph(config_from_record({k: run[k] for k in CONFIG_KEYS if k in run}))
        x, adjacency = graph.matrices()
        graphs.append((x, adjacency, graph.setting_vector()))
        values = [target_value(run, t) for t in DRIPLE]
        targets.append([np.log(v) if v else np.nan for v in values])
    return graphs, np.array(targets, dtype=np.float64).reshape(len(runs), len(DRIPLE))


@dataclass(frozen=True)
class Scales:
    """The training runs' means and spreads: node features, setting features, log targets."""

    node: tuple[np.ndarray, np.ndarray]
    setting: tuple[np.ndarray, np.ndarray]
    target: tuple[np.ndarray, np.ndarray]

    @classmethod
    def of(cls, graphs: list, y: np.ndarray) -> "Scales":
        nodes = np.concatenate([g[0] for g in graphs])
        settings = np.array([g[2] for g in graphs])
        spread = lambda a: np.where(a > 1e-9, a, 1.0)  # noqa: E731  (a constant feature stays as it is)
        with warnings.catch_warnings():  # a figure no run has (rss_idle_s, often): mean 0, spread 1
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, std = np.nan_to_num(np.nanmean(y, axis=0)), np.nan_to_num(np.nanstd(y, axis=0), nan=1.0)
        return cls((nodes.mean(0), spread(nodes.std(0))), (settings.mean(0), spread(settings.std(0))),
                   (mean, spread(std)))


def batch(graphs: list, scales: Scales) -> tuple[torch.Tensor, ...]:
    """Padded tensors: node features (B, N, F), normalised adjacency (B, N, N), node mask (B, N), settings (B, S)."""
    size = max(len(g[0]) for g in graphs)
    x = np.zeros((len(graphs), size, graphs[0][0].shape[1]))
    a = np.zeros((len(graphs), size, size))
    mask = np.zeros((len(graphs), size))
    for i, (nodes, adjacency, _) in enumerate(graphs):
        n = len(nodes)
        x[i, :n] = (nodes - scales.node[0]) / scales.node[1]
        degree = adjacency.sum(1) ** -0.5
        a[i, :n, :n] = adjacency * degree[:, None] * degree[None, :]
        mask[i, :n] = 1.0
    s = (np.array([g[2] for g in graphs]) - scales.setting[0]) / scales.setting[1]
    return tuple(torch.tensor(v, dtype=torch.float32) for v in (x, a, mask, s))


class GCN(torch.nn.Module):
    def __init__(self, node_features: int, setting_features: int, outputs: int) -> None:
        super().__init__()
        self.w1 = torch.nn.Linear(node_features, HIDDEN)
        self.w2 = torch.nn.Linear(HIDDEN, HIDDEN)
        self.ws = torch.nn.Linear(setting_features, HIDDEN)
        self.w3 = torch.nn.Linear(3 * HIDDEN, 2 * HIDDEN)
        self.w4 = torch.nn.Linear(2 * HIDDEN, outputs)

    def forward(self, x, a, mask, s):
        h = torch.relu(a @ self.w1(x))
        h = torch.relu(a @ self.w2(h)) * mask[..., None]
        mean = h.sum(1) / mask.sum(1, keepdim=True)
        peak = (h - 1e9 * (1 - mask[..., None])).max(1).values
        return self.w4(torch.relu(self.w3(torch.cat([mean, peak, torch.relu(self.ws(s))], dim=1))))


def train(net: GCN, inputs: tuple, y: torch.Tensor, epochs: int, rate: float) -> None:
    known = ~torch.isnan(y)
    target = torch.nan_to_num(y)
    optimiser = torch.optim.Adam(net.parameters(), lr=rate, weight_decay=WEIGHT_DECAY)
    for _ in range(epochs):
        optimiser.zero_grad()
        loss = ((net(*inputs) - target) ** 2 * known).sum() / known.sum().clamp(min=1)
        loss.backward()
        optimiser.step()


class GraphModel:
    """An ensemble of GCNs with the scales of the runs they learnt from."""

    def __init__(self, nets: list[GCN], scales: Scales) -> None:
        self.nets, self.scales = nets, scales

    @classmethod
    def fit(cls, runs: list[dict], seed: int = 0, epochs: int | None = None,
            members: int | None = None) -> "GraphModel":
        """An ensemble of `members` (default ENSEMBLE) GCNs trained `epochs` (EPOCHS) on the runs."""
        torch.set_num_threads(1)
        epochs, members = epochs or EPOCHS, members or ENSEMBLE
        graphs, y = encode(runs)
        scales = Scales.of(graphs, y)
        inputs, target = batch(graphs, scales), standardised(y, scales)
        nets = []
        for member in range(members):
            torch.manual_seed(seed * 1000 + member)
            net = GCN(graphs[0][0].shape[1], len(graphs[0][2]), len(DRIPLE))
            train(net, inputs, target, epochs, RATE)
            nets.append(net)
        return cls(nets, scales)

    def fine_tune(self, runs: list[dict], epochs: int | None = None) -> "GraphModel":
        """A copy trained further on `runs` (of a new setting) from these weights, at a tenth of the rate, for
        `epochs` (default FINE_TUNE_EPOCHS)."""
        torch.set_num_threads(1)
        epochs = epochs or FINE_TUNE_EPOCHS
        graphs, y = encode(runs)
        inputs, target = batch(graphs, self.scales), standardised(y, self.scales)
        nets = []
        for net in self.nets:
            copy = GCN(net.w1.in_features, net.ws.in_features, len(DRIPLE))
            copy.load_state_dict(net.state_dict())
            train(copy, inputs, target, epochs, RATE / 10)
            nets.append(copy)
        return GraphModel(nets, self.scales)

    def log_predict(self, runs: list[dict]) -> np.ndarray:
        """(runs, 12) predicted logs of the figures: the ensemble's mean."""
        graphs, _ = encode(runs)
        inputs = batch(graphs, self.scales)
        with torch.no_grad():
            out = np.mean([net(*inputs).numpy() for net in self.nets], axis=0)
        return out * self.scales.target[1] + self.scales.target[0]

    def predict(self, runs: list[dict]) -> dict[str, np.ndarray]:
        logs = self.log_predict(runs)
        return {t: np.exp(logs[:, i]) for i, t in enumerate(DRIPLE)}


def standardised(y: np.ndarray, scales: Scales) -> torch.Tensor:
    return torch.tensor((y - scales.target[0]) / scales.target[1], dtype=torch.float32)

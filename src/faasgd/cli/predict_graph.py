"""`faasgd predict --graph DATA`: the 12 Driple figures of a network and setting, from the graph inspector.

    faasgd predict --graph results/inspector.jsonl --set hidden_sizes=256,128 --set number_of_workers=4
                   --set store=memcached [--level 0.9] [--json]

DATA is the inspector's data set (JSON lines of run records, as bench/inspector_data.py writes them). The GCN
(cli/graph_model.py) reads the network's graph (faasgd.profile.graph), so it predicts networks never profiled,
which `faasgd predict`'s ridge cannot tell apart beyond their parameter count.

Intervals (split conformal): the runs of a random CALIBRATION_SHARE of the architectures (seeded) are held out;
the model is fitted on the others, and a figure's interval is the prediction times / divided by exp(q), q the
ceil((n + 1) level)-th smallest absolute log residual of that figure over the n held-out runs that have it. A new
run of a new architecture, exchangeable with the held-out ones, lies inside with probability >= level; with
too few held-out runs for the level (ceil((n + 1) level) > n) there is no interval (null). The prediction is that
model's (the one the interval was measured for), so it learns from 1 - CALIBRATION_SHARE of the runs.
Op types of the asked graph that no run's graph has (a cnn's conv, when the data set holds MLPs) are named on
stderr and in `--json`'s "unseen_ops": the figures are then extrapolated.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

from faasgd.cli.predictor import CONFIG_KEYS, target_value
from faasgd.config import config_from_record, load_config
from faasgd.errors import ConfigError
from faasgd.profile.figures import DRIPLE
from faasgd.profile.graph import job_graph

CALIBRATION_SHARE = 0.2
SEED = 0


def read_runs(path: str) -> list[dict]:
    """The finished runs of a data set; ConfigError naming --graph when it is missing, not JSON lines, or empty."""
    if not os.path.isfile(path):
        raise ConfigError("--graph", f"no data set at {path!r}: make one with `python bench/inspector_data.py {path}`")
    runs = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
            except json.JSONDecodeError as error:
                raise ConfigError("--graph", f"{path} line {number} is not JSON ({error.msg})") from None
            if not isinstance(run, dict) or "hidden_sizes" not in run:
                raise ConfigError("--graph", f"{path} line {number} is not a run record (no hidden_sizes)")
            if run.get("state") == "done":
                runs.append(run)
    architectures = {json.dumps(run["hidden_sizes"]) for run in runs}
    if len(architectures) < 2:
        raise ConfigError("--graph", f"{path} holds {len(runs)} finished runs of {len(architectures)} "
                                     "architecture(s): the inspector needs at least two to learn and calibrate")
    return runs


def split(runs: list[dict]) -> tuple[list[dict], list[dict]]:
    """(fitted on, calibrated on): the runs of a seeded CALIBRATION_SHARE of the architectures are held out."""
    names = sorted({json.dumps(r["hidden_sizes"]) for r in runs})
    held = set(np.random.default_rng(SEED).permutation(names)[:max(1, round(CALIBRATION_SHARE * len(names)))])
    return ([r for r in runs if json.dumps(r["hidden_sizes"]) not in held],
            [r for r in runs if json.dumps(r["hidden_sizes"]) in held])


def quantiles(model, calibration: list[dict], level: float) -> dict[str, float | None]:
    """Per figure, the conformal quantile of the absolute log residuals (None: too few runs for the level)."""
    logs = model.log_predict(calibration)
    out = {}
    for i, t in enumerate(DRIPLE):
        residuals = sorted(abs(logs[j, i] - math.log(v)) for j, r in enumerate(calibration)
                           if (v := target_value(r, t)) is not None)
        rank = math.ceil((len(residuals) + 1) * level)
        out[t] = residuals[rank - 1] if residuals and rank <= len(residuals) else None
    return out


def unseen_ops(runs: list[dict], graph) -> list[str]:
    seen = {n.op for r in runs for n in job_graph(config_from_record({k: r[k] for k in CONFIG_KEYS if k in r})).nodes}
    return sorted({n.op for n in graph.nodes} - seen)


def predict(args) -> int:
    """Print (or --json) the figures of the `--set` configuration with their intervals at --level."""
    try:
        from faasgd.cli.graph_model import GraphModel
    except ImportError:
        raise ConfigError("--graph", "needs PyTorch (the extra `bench`: pip install 'faasgd[bench]')") from None
    from faasgd.cli.predict import show
    from faasgd.cli.results import parse_where

    config = load_config({}, parse_where(args.set)).to_dict()  # every key checked, as a request's
    runs = read_runs(args.graph)
    graph = job_graph(config_from_record({k: config[k] for k in CONFIG_KEYS if k in config}))
    fitted, calibration = split(runs)
    model = GraphModel.fit(fitted, seed=SEED)
    logs, q = model.log_predict([config])[0], quantiles(model, calibration, args.level)
    figures = {t: {"predicted": float(math.exp(logs[i])),
                   "low": None if q[t] is None else float(math.exp(logs[i] - q[t])),
                   "high": None if q[t] is None else float(math.exp(logs[i] + q[t])),
                   "runs": sum(target_value(r, t) is not None for r in fitted)} for i, t in enumerate(DRIPLE)}
    unseen = unseen_ops(runs, graph)
    if unseen:
        print(f"faasgd: note: the graph has op(s) {', '.join(unseen)} that no run in {args.graph} has: its "
              "figures are extrapolated", file=sys.stderr)
    if args.json:
        print(json.dumps({"figures": figures, "level": args.level, "runs": len(fitted), "calibration_runs":
                          len(calibration), "unseen_ops": unseen, "graph": {"nodes": len(graph.nodes), "params":
                          graph.params, "flops": graph.flops}}, sort_keys=True))
        return 0
    return show(figures, False, None, f"low-high: {args.level:.0%} split-conformal interval; GCN on {len(fitted)} "
                                      f"runs, calibrated on {len(calibration)} of other architectures")

"""Driple's graph inspector against today's ridge: held-out architectures, and transfer to a new setting.

    python bench/inspector.py [--quick] [--data results/inspector.jsonl] [--folds 5] [--draws 3]

Makes (or completes: it is resumable) the data set with bench/inspector_data.py (`--quick`: its small set, into
results/inspector-quick.jsonl), then prints two markdown tables and a last line:
- held-out architectures: the architectures are split in `--folds` groups; each group's runs (every setting of
  its architectures) are predicted by the GCN (faasgd.cli.graph_model) and by `faasgd predict`'s ridge
  (faasgd.cli.predictor.Predictor), both fitted on the other groups' runs; MAPE % per Driple figure over the
  held-out runs that have the figure (the ridge's own validate() leaves out configurations, not architectures);
- transfer: from the source family (Redis, 2 workers) to the target (Memcached, 4 workers): a random TRANSFER_SHARE
  of the target's runs adapts the source model (the GCN fine-tuned; the ridge adapted as `faasgd predict
  --transfer-to` adapts it), against a model of the same kind fitted on those runs alone (scratch), and the
  source model as it is (0 runs); MAPE % on the target's other runs, the mean over `--draws` random choices;
- last: `held-out architectures MAPE: graph G% ridge R%`, G and R the means over the 12 figures (a figure no
  held-out run has counts for neither: both means are over the figures both models were scored on).
Times are the process's CPU time (time.process_time), the jobs' in bench/inspector_data.py's log.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from inspector_data import QUICK, generate, read

from faasgd.cli.graph_model import GraphModel
from faasgd.cli.predictor import Predictor, mape, target_value
from faasgd.profile.figures import DRIPLE

TRANSFER_SHARE = 0.2


def arch_of(run: dict) -> tuple[int, ...]:
    return tuple(run["architecture"])


def scored(pairs: dict[str, list]) -> dict[str, float | None]:
    return {t: mape(pairs[t]) for t in DRIPLE}


def add_pairs(pairs: dict[str, list], predicted: dict[str, list], runs: list[dict]) -> None:
    for t in DRIPLE:
        for p, run in zip(predicted[t], runs):
            actual = target_value(run, t)
            if actual is not None and p is not None and math.isfinite(p):
                pairs[t].append((float(p), actual))


def ridge_predictions(model: Predictor, runs: list[dict]) -> dict[str, list]:
    found = [model.predict(r) for r in runs]
    return {t: [f[t] for f in found] for t in DRIPLE}


def held_out(runs: list[dict], folds: int, seed: int = 0) -> tuple[dict, dict]:
    """MAPE per figure of the GCN and the ridge on held-out architectures (`folds` groups of them)."""
    archs = sorted({arch_of(r) for r in runs})
    order = [archs[i] for i in np.random.default_rng(seed).permutation(len(archs))]
    graph: dict[str, list] = {t: [] for t in DRIPLE}
    ridge: dict[str, list] = {t: [] for t in DRIPLE}
    for fold in range(folds):
        held = set(order[fold::folds])
        train = [r for r in runs if arch_of(r) not in held]
        test = [r for r in runs if arch_of(r) in held]
        if not train or not test:
            continue
        add_pairs(graph, GraphModel.fit(train, seed=fold).predict(test), test)
        add_pairs(ridge, ridge_predictions(Predictor.fit(train), test), test)
    return scored(graph), scored(ridge)


def transfer(runs: list[dict], draws: int) -> dict[str, dict]:
    """MAPE per figure on the target family's runs not drawn, for each way of reaching it (TRANSFER_SHARE of them)."""
    source = [r for r in runs if r["family"] == "source"]
    target = [r for r in runs if r["family"] == "target"]
    n = max(2, int(TRANSFER_SHARE * len(target)))
    graph_source, ridge_source = GraphModel.fit(source), Predictor.fit(source)
    columns = ("graph 0 runs", "graph transfer", "graph scratch", "ridge 0 runs", "ridge transfer", "ridge scratch")
    pairs = {c: {t: [] for t in DRIPLE} for c in columns}
    rng = np.random.default_rng(0)
    for draw in range(draws):
        order = rng.permutation(len(target))
        used, rest = [target[i] for i in order[:n]], [target[i] for i in order[n:]]
        add_pairs(pairs["graph 0 runs"], graph_source.predict(rest), rest)
        add_pairs(pairs["graph transfer"], graph_source.fine_tune(used).predict(rest), rest)
        add_pairs(pairs["graph scratch"], GraphModel.fit(used, seed=draw).predict(rest), rest)
        add_pairs(pairs["ridge 0 runs"], ridge_predictions(ridge_source, rest), rest)
        add_pairs(pairs["ridge transfer"], ridge_predictions(Predictor.fit(used, prior=ridge_source), rest), rest)
        add_pairs(pairs["ridge scratch"], ridge_predictions(Predictor.fit(used), rest), rest)
    return {"runs": {"source": len(source), "target": len(target), "used": n}, **{c: scored(pairs[c]) for c in columns}}


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def mean_over(found: dict[str, float | None], figures: list[str]) -> float:
    return float(np.mean([found[t] for t in figures]))


def table(columns: dict[str, dict]) -> list[str]:
    """A markdown table: a row per figure scored by every column, then their mean."""
    figures = [t for t in DRIPLE if all(c[t] is not None for c in columns.values())]
    lines = ["| figure | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {t} | " + " | ".join(pct(c[t]) for c in columns.values()) + " |" for t in figures]
    lines.append("| **mean** | " + " | ".join(f"**{mean_over(c, figures):.1f}**" for c in columns.values()) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"the small data set ({QUICK})")
    parser.add_argument("--data", default=None, help="the data set (default results/inspector[-quick].jsonl)")
    parser.add_argument("--architectures", type=int, default=30, help="without --quick: architectures")
    parser.add_argument("--settings", type=int, default=3, help="without --quick: settings per architecture, family")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--draws", type=int, default=3)
    args = parser.parse_args(argv)
    path = args.data or os.path.join("results", "inspector-quick.jsonl" if args.quick else "inspector.jsonl")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    count, settings = (QUICK["architectures"], QUICK["settings"]) if args.quick else (args.architectures, args.settings)
    ran, skipped = generate(path, count, settings)
    runs = [r for r in read(path) if r.get("state") == "done"]
    print(f"{len(runs)} runs done in {path} ({ran} run now, {skipped} there already), "
          f"{len({arch_of(r) for r in runs})} architectures", file=sys.stderr)
    started = time.process_time()
    graph, ridge = held_out(runs, args.folds)
    moved = transfer(runs, args.draws)
    print(f"\nHeld-out architectures ({args.folds} folds, {len(runs)} runs), MAPE %:\n")
    print("\n".join(table({"graph (GCN)": graph, "ridge": ridge})))
    counts = moved.pop("runs")
    print(f"\nTransfer Redis, 2 workers ({counts['source']} runs) -> Memcached, 4 workers ({counts['target']} runs): "
          f"{counts['used']} target runs ({TRANSFER_SHARE:.0%}) used, MAPE % on the others, mean of {args.draws} "
          f"draws:\n")
    print("\n".join(table(moved)))
    print(f"\n({time.process_time() - started:.0f} s of process CPU time for the models)\n")
    figures = [t for t in DRIPLE if graph[t] is not None and ridge[t] is not None]
    print(f"held-out architectures MAPE: graph {mean_over(graph, figures):.1f}% ridge {mean_over(ridge, figures):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Scaling: workers in {1, 2, 4, 8} x n_fetch = n_push in {1, 10, 50}, on the local runtime.

For each configuration: epochs to 0.85 (global epochs: samples / training rows), time to 0.85,
samples/s, staleness p50/p99 and conflicts; a table on stdout and a PNG of epochs to target
against workers (one line per period). 8 workers share Community Edition's 5 emnist-train
replicas, and all of them share this machine's cores: the epochs column is the statistical
efficiency, the samples/s column the hardware efficiency.
Usage: python bench/scaling.py [--out results/scaling] [--rounds 1]     (from the repository root)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from faasgd.batch.matrix import load_matrix
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import LocalTarget
from faasgd.local.stores import free_port

MATRIX = Path(__file__).parent / "matrix" / "scaling.yml"


def plot(runs: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5), dpi=110)
    axes = figure.add_subplot()
    for period in sorted({r["config"]["n_fetch"] for r in runs}):
        points = sorted((r["config"]["number_of_workers"], r["epochs"]) for r in runs
                        if r["config"]["n_fetch"] == period and r.get("reached_target"))
        if points:
            axes.plot(*zip(*points), marker="o", label=f"n_fetch = n_push = {period}")
    axes.set_xscale("log", base=2)
    axes.set_xticks([1, 2, 4, 8], labels=["1", "2", "4", "8"])
    axes.set_xlabel("workers")
    axes.set_ylabel("epochs to 0.85 test accuracy")
    axes.set_title("Statistical efficiency of Downpour SGD, Fashion-MNIST (missing points: not reached)")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/scaling")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    matrix = load_matrix(MATRIX)
    target = LocalTarget("stack.yml", tempfile.mkdtemp(prefix="faasgd-scaling-"), free_port())
    target.start()
    try:
        runs = run_batch(matrix, target, args.rounds, 1800, lambda line: print(line, flush=True))
    finally:
        target.stop()
    print(f"\n{'workers':>7} {'period':>6} {'epochs to 0.85':>14} {'time (s)':>8} {'samples/s':>10} "
          f"{'stal p50':>8} {'stal p99':>8} {'conflicts':>9}")
    for r in runs:
        c = r["config"]
        epochs = f"{r['epochs']:.2f}" if r.get("reached_target") else "not reached"
        ttt = f"{r['time_to_target_s']:.1f}" if r.get("time_to_target_s") else "-"
        print(f"{c['number_of_workers']:>7} {c['n_fetch']:>6} {epochs:>14} {ttt:>8} {r.get('samples_per_s') or 0:>10,.0f} "
              f"{r.get('staleness_p50')!s:>8} {r.get('staleness_p99')!s:>8} {r.get('conflicts')!s:>9}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(runs, out / "scaling.png")
    print(f"wrote {out / 'scaling.png'}")


if __name__ == "__main__":
    main()

"""The figures of `faasgd predict` (docs/how-to/predict.md), recomputed from a results database.

Reads the runs of a study (by default every batch named `predict-study`, e.g. bench/matrix/predict-study.yml)
and prints one markdown table: per figure, the leave-one-configuration-out MAPE on every run and on the source
setting's alone, the rounds' own spread (a run predicted by the other rounds of its configuration: the noise
floor), and the transfer curve from the source setting to the target one (the source predictor adapted with
N target runs, MAPE on the target's other runs, the mean over `--draws` random choices); then the issue's goals
(<= 20% held out for CPU, network TX and RX and time to target; <= 25% after transfer with 5 runs), met or not.
Usage: python bench/predict_study.py [DB] [--batch ID ...] [--name predict-study] [--transfer store=memcached]
           [--draws 20]
"""

from __future__ import annotations

import argparse
from datetime import datetime

from faasgd.api import results_store
from faasgd.cli.predictor import TARGETS, round_spread, transfer_curve, validate

COUNTS = (0, 1, 3, 5, 10)
GOALS = {  # the resources -> the figures that measure them (a burst's rate and the run's total)
    "CPU": ("cpu_burst_use", "cpu_s"), "network TX": ("tx_burst_use", "tx_bytes"),
    "network RX": ("rx_burst_use", "rx_bytes"), "time to target": ("time_to_target_s",)}
HELD_OUT_GOAL, TRANSFER_GOAL, TRANSFER_RUNS = 20.0, 25.0, 5


def study_runs(path: str, batch_ids: list[int] | None, name: str) -> tuple[list[dict], list[dict]]:
    db = results_store.open_db(path, create=False)
    with db:
        chosen = [b for b in results_store.batches(db) if (b["batch_id"] in batch_ids if batch_ids else
                                                            b["name"] == name)]
        runs = results_store.runs(db, [b["batch_id"] for b in chosen])
    return chosen, runs


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def verdict(value: float | None, goal: float) -> str:
    return f"{'met' if value is not None and value <= goal else 'not met'}, goal <= {goal:.0f}"


def wall_s(batch: dict) -> float | None:
    if not batch.get("finished_at"):
        return None
    return (datetime.fromisoformat(batch["finished_at"]) - datetime.fromisoformat(batch["started_at"])).total_seconds()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", nargs="?", default=results_store.default_path())
    parser.add_argument("--batch", type=int, action="append", default=None, help="these batches (default: --name)")
    parser.add_argument("--name", default="predict-study", help="every batch of this name")
    parser.add_argument("--transfer", default="store=memcached", metavar="KEY=VALUE", help="the target setting")
    parser.add_argument("--draws", type=int, default=20, help="random choices of the N target runs averaged")
    args = parser.parse_args()
    batches, runs = study_runs(args.db, args.batch, args.name)
    if not runs:
        parser.error(f"no runs of {args.batch or args.name} in {args.db}")
    key, value = args.transfer.split("=", 1)
    target = [r for r in runs if results_store.text(r.get(key)) == value]
    source = [r for r in runs if results_store.text(r.get(key)) != value]
    done = sum(r.get("state") == "done" for r in runs)
    walls = [w for w in map(wall_s, batches) if w is not None]
    print(f"{len(runs)} runs ({done} done) in {len(batches)} batch(es), {sum(walls):.0f} s of batch wall time; "
          f"source: {key} != {value} ({len(source)} runs), target: {key} = {value} ({len(target)} runs)\n")
    held, held_source, spread = validate(runs), validate(source), round_spread(runs)
    counts = [n for n in COUNTS if n < len(target)]
    curve = transfer_curve(source, target, counts, draws=args.draws) if target and source else {}
    print("| figure | held out, all runs | held out, source only | rounds' spread | vs configuration means | "
          + " | ".join(f"transfer {n}" for n in counts) + " |")
    print("|---" * (5 + len(counts)) + "|")
    for t in TARGETS:
        print(f"| {t} | {pct(held[t]['mape'])} ({held[t]['predictions']}) | {pct(held_source[t]['mape'])} | "
              f"{pct(spread[t])} | {pct(held[t]['mape_of_means'])} ({held[t]['configurations']}) | "
              + " | ".join(pct(curve[n][t]) for n in counts) + " |")
    print("\nMAPE %, (held-out predictions); vs configuration means: the same held-out predictions against the mean"
          " of each configuration's rounds (second figure; the goal is per run); transfer N: the source predictor"
          " adapted with N target runs.\n")
    for goal, figures in GOALS.items():
        for figure in figures:
            found, moved = held[figure]["mape"], curve.get(TRANSFER_RUNS, {}).get(figure)
            print(f"{goal:15s} {figure:17s} held out {pct(found):>5s} % ({verdict(found, HELD_OUT_GOAL)})   "
                  f"transfer, {TRANSFER_RUNS} runs {pct(moved):>5s} % ({verdict(moved, TRANSFER_GOAL)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

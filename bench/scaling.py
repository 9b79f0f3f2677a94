"""Scaling: workers x update rule x n_fetch = n_push, several seeds, through the local runtime.

Every run is a real job on `faasgd up` (Redis by default): emnist-setup fans the workers out and the
runtime runs them all at once (replicas x calls per replica; the result's max_concurrent_workers
says how many trained together). The stop rule is the validation accuracy (rows held out of the
training split); the reported test accuracy is the kept model's. Per configuration, over the seeds:
samples and seconds to the validation target (mean, stdev, how many seeds reached it), the model's
test accuracy, the lowest test accuracy any worker saw after its first epoch, samples/s, staleness
in steps, and the ratio of samples to target to one worker's under the same rule and period.
A PNG plots samples to target against workers, one panel per period, one line per rule.

More workers than cores run time-sliced (this machine has 2 cores): samples to target measure the
statistical efficiency exactly; seconds and samples/s at 4 and 8 workers mostly measure the sharing.
AdaGrad runs at its own learning rate (--adagrad-lr, default 0.05, the default learning_rate; docs/explanation/downpour.md "Update rules").
Usage: python bench/scaling.py [--workers 1,2,4,8] [--rules sum,average,adagrad] [--periods 1,10,50]
                               [--seeds 5] [--store redis] [--communication background|coalesce|blocking]
                               [--global-batch N] [--out results/scaling]   (from the repository root)
--global-batch N keeps the rows of one step of all workers at N: W workers run batch_size N / W each (the
large-batch bound, bench/batch_bound.py, is why: at 128 rows each, W workers take one W x 128 step at best).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from faasgd.batch.matrix import parse_matrix
from faasgd.batch.runs import run_batch
from faasgd.batch.targets import LocalTarget
from faasgd.local.services.stores import free_port

TARGET = 0.85


def matrix(workers: list[int], rules: list[str], periods: list[int], seeds: int, store: str, adagrad_lr: float,
           max_epochs: int, communication: str = "background", global_batch: int = 0):
    """The batch of configurations; `global_batch` N > 0: W workers take N / W rows a step each (N in all)."""
    rates = {"sum": 0.1, "average": 0.1, "adagrad": adagrad_lr}
    for w in workers:
        if global_batch and global_batch % w:
            raise SystemExit(f"--global-batch {global_batch} is not a multiple of {w} workers")
    document = {
        "name": "scaling", "rounds": seeds,
        "fixed": {"dataset": "fashion-mnist", "target_accuracy": TARGET, "max_epochs": max_epochs, "store": store,
                  "communication": communication},
        "matrix": {"number_of_workers": workers, "update_rule": rules, "learning_rate": [rates[r] for r in rules],
                   "n_fetch": periods, "n_push": periods},
        "together": [["update_rule", "learning_rate"], ["n_fetch", "n_push"]],
    }
    if global_batch:
        document["matrix"]["batch_size"] = [global_batch // w for w in workers]
        document["together"].append(["number_of_workers", "batch_size"])
    return parse_matrix(document, "scaling", max_runs=10_000)


def lowest_test_after_first_epoch(run: dict) -> float | None:
    """The lowest test accuracy of the epoch events after each worker's first (None: no such event)."""
    points = run.get("test_curve") or []
    later = [accuracy for _, accuracy in points[run["config"]["number_of_workers"]:]]
    return min(later) if later else None


def mean_sd(values: list[float]) -> str:
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):,.0f} ± {sd:,.0f}" if abs(statistics.mean(values)) >= 100 else \
        f"{statistics.mean(values):.3f} ± {sd:.3f}"


def summarise(runs: list[dict]) -> list[dict]:
    """One row per (rule, period, workers): the seeds' figures."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        c = run["config"]
        groups.setdefault((c["update_rule"], c["n_fetch"], c["number_of_workers"]), []).append(run)
    rows = []
    for (rule, period, workers), group in sorted(groups.items()):
        reached = [r for r in group if r.get("reached_target")]
        lows = [x for x in (lowest_test_after_first_epoch(r) for r in group) if x is not None]
        rows.append({
            "rule": rule, "period": period, "workers": workers, "seeds": len(group), "reached": len(reached),
            "samples": [r["samples_to_target"] for r in reached], "seconds": [r["time_to_target_s"] for r in reached],
            "test": [r["final_test_accuracy"] for r in group if r.get("final_test_accuracy") is not None],
            "lowest_test": min(lows) if lows else None,
            "samples_per_s": [r.get("samples_per_s") or 0 for r in group if r.get("state") == "done"],
            "staleness_p50": [r["staleness_p50"] for r in group if r.get("staleness_p50") is not None],
            "concurrent": sorted({r.get("max_concurrent_workers") for r in group if r.get("max_concurrent_workers")}),
            "failed": [r.get("error") for r in group if r.get("state") != "done"],
        })
    one = {(r["rule"], r["period"]): statistics.mean(r["samples"]) for r in rows if r["workers"] == 1 and r["samples"]}
    for row in rows:
        base = one.get((row["rule"], row["period"]))
        worst = max(row["samples"]) if row["samples"] else None
        row["ratio_mean"] = statistics.mean(row["samples"]) / base if base and row["samples"] else None
        row["ratio_worst"] = worst / base if base and worst else None
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"\n{'rule':>8} {'period':>6} {'workers':>7} {'reached':>7} {'samples to 0.85 val':>22} {'x 1 worker':>12} "
          f"{'seconds':>13} {'model test acc':>15} {'lowest test':>11} {'samples/s':>16} {'stal p50':>9} {'at once':>7}")
    for r in rows:
        ratio = f"{r['ratio_mean']:.2f} ({r['ratio_worst']:.2f})" if r["ratio_mean"] else "-"
        low = f"{r['lowest_test']:.3f}" if r["lowest_test"] is not None else "-"
        print(f"{r['rule']:>8} {r['period']:>6} {r['workers']:>7} {r['reached']:>3}/{r['seeds']:<3} "
              f"{mean_sd(r['samples']):>22} {ratio:>12} {mean_sd(r['seconds']):>13} {mean_sd(r['test']):>15} "
              f"{low:>11} {mean_sd(r['samples_per_s']):>16} {mean_sd(r['staleness_p50']):>9} "
              f"{','.join(map(str, r['concurrent'])) or '-':>7}")
        for error in r["failed"]:
            print(f"{'':>24}failed: {error}")
    print("x 1 worker: mean samples to target over one worker's mean (worst seed in brackets), same rule and period."
          "\nlowest test: the lowest test accuracy after each worker's first epoch, over all seeds."
          "\nWorkers beyond this machine's 2 cores run concurrently, time-sliced: seconds and samples/s at 4 and 8"
          " workers measure the sharing; samples to target the statistical efficiency.")


def plot(rows: list[dict], path: Path, batch_label: str = "batch 128") -> None:
    from matplotlib.figure import Figure

    periods = sorted({r["period"] for r in rows})
    figure = Figure(figsize=(4.2 * len(periods), 4.2), dpi=110)
    for index, period in enumerate(periods):
        axes = figure.add_subplot(1, len(periods), index + 1)
        for rule in sorted({r["rule"] for r in rows}):
            points = [(r["workers"], statistics.mean(r["samples"]), statistics.stdev(r["samples"]) if len(r["samples"]) > 1
                       else 0.0) for r in rows if r["rule"] == rule and r["period"] == period and r["samples"]]
            if points:
                x, y, e = zip(*sorted(points))
                axes.errorbar(x, y, yerr=e, marker="o", capsize=3, label=rule)
        axes.set_xscale("log", base=2)
        axes.set_xticks([1, 2, 4, 8], labels=["1", "2", "4", "8"])
        axes.set_xlabel("concurrent workers")
        axes.set_ylabel(f"samples to {TARGET} validation accuracy")
        axes.set_title(f"n_fetch = n_push = {period}")
        axes.grid(alpha=0.3)
        axes.legend()
    figure.suptitle(f"Fashion-MNIST, 784-100-10 MLP, {batch_label}; mean ± stdev over seeds (missing: not reached)")
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--rules", default="sum,average,adagrad")
    parser.add_argument("--periods", default="1,10,50")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--store", default="redis", choices=("redis", "memcached"))
    parser.add_argument("--adagrad-lr", type=float, default=0.05)
    parser.add_argument("--max-epochs", type=int, default=15)
    parser.add_argument("--communication", default="background", choices=("background", "coalesce", "blocking"))
    parser.add_argument("--global-batch", type=int, default=0,
                        help="N > 0: batch_size N / workers (the workers' rows a step stay N); 0: 128 per worker")
    parser.add_argument("--out", default="results/scaling")
    args = parser.parse_args()
    batch = matrix([int(w) for w in args.workers.split(",")], args.rules.split(","),
                   [int(p) for p in args.periods.split(",")], args.seeds, args.store, args.adagrad_lr, args.max_epochs,
                   args.communication, args.global_batch)
    target = LocalTarget("stack.yml", tempfile.mkdtemp(prefix="faasgd-scaling-"), free_port())
    target.start()
    try:
        runs = run_batch(batch, target, args.seeds, 1800, lambda line: print(line, flush=True))
    finally:
        target.stop()
    rows = summarise(runs)
    print_table(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs.json").write_text(json.dumps(runs, indent=1))
    plot(rows, out / "scaling.png",
         f"batch {args.global_batch} / workers" if args.global_batch else "batch 128")
    print(f"wrote {out / 'scaling.png'} and {out / 'runs.json'}")


if __name__ == "__main__":
    main()

"""The whole command as a user meets it: `faasgd up`, `faasgd down`, and `faasgd train` against one numpy process.

Every figure is the wall time of a whole process, start to exit, taken by this bench around the subprocess with
time.perf_counter (monotonic, nanosecond resolution): imports, the runtime's start and stop, data loading and
training included. Rows, alternating within each round (so a drift in the machine's load falls on all), medians
and ranges over --rounds:
  up          `faasgd up --port 0`: returns once the gateway serves (replicas still starting)
  down        `faasgd down` right after it: replicas idle, killed at once; stores and broker stopped
  up --wait   `faasgd up --port 0 --wait`: returns once every replica serves
  down        `faasgd down` after it
  train       `faasgd train --workers 2 --dataset fashion-mnist --target-accuracy 0.85` (as `make run`): starts its
              runtime with the training functions only, runs the job to 0.85 validation accuracy, stops the runtime;
              beside it the job's own time to target and wall time (its result record, on the store's clock:
              Redis TIME, 1 µs), so the rest of the whole command (runtime start and stop, replicas' start, the
              CLI) is the difference
  train 2 x 64  the same with `--global-batch-size 128` (64 rows a step per worker, numpy's 128 per pair of steps:
              with `average` 2 x 128 moves the model half as far per sample), whole command and its job's time to
              target; fewer samples, but each costs more (a push per 640 samples, smaller steps)
  numpy       one process, plain minibatch SGD with faasgd's model functions at 1 BLAS thread, batch 128, lr 0.1,
              the same split (the last 5000 training rows held out) and the same stop rule (validation accuracy
              >= 0.85, checked every half of the training rows and at each epoch's end), from the same seed
Goals: up <= 1 s, down <= 1 s, train <= 1.5 x numpy. On this machine's 2 cores the train row's 2 workers, their
gateway and stores share the cores with each other.
Usage: python bench/updown.py [--rounds 3] [--json]           (from the repository root, `make` run once)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET, BATCH, LEARNING_RATE, HELD_OUT = 0.85, 128, 0.1, 5000
CLOCK = "time.perf_counter around the whole subprocess (monotonic, ns resolution)"


def timed(argv: list[str], cwd: Path = ROOT) -> tuple[float, subprocess.CompletedProcess]:
    """(seconds, the finished process) of one whole command."""
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return seconds, done


def faasgd(*args: str) -> list[str]:
    return [sys.executable, "-m", "faasgd.cli", *args]


def one_round() -> dict[str, float]:
    """Each row once, in the module docstring's order; the runtime folders are fresh and removed."""
    figures = {}
    with tempfile.TemporaryDirectory(prefix="faasgd-updown-") as folder:
        for label, flags in (("up", ()), ("up --wait", ("--wait",))):
            directory = str(Path(folder) / label.replace(" ", ""))
            figures[label], _ = timed(faasgd("up", "--port", "0", "--dir", directory, *flags))
            figures[f"down after {label}"], _ = timed(faasgd("down", "--dir", directory))
        for label, batch in (("train", ()), ("train 2 x 64", ("--global-batch-size", str(2 * 64)))):
            figures[label], done = timed(faasgd("train", "--workers", "2", *batch, "--dataset", "fashion-mnist",
                                                "--target-accuracy", str(TARGET), "--dir",
                                                str(Path(folder) / label.replace(" ", "")), "--quiet", "--json"))
            result = json.loads(done.stdout)  # the job's own figures, on the store's clock (result["clock"])
            figures[f"{label}: job to target"] = result["time_to_target_s"]  # the store's clock (result["clock"])
            if label == "train":
                figures["train: job wall"] = result["wall_s"]
    figures["numpy"], done = timed([sys.executable, __file__, "--role", "numpy"])
    figures["numpy accuracy"] = json.loads(done.stdout)["accuracy"]
    return figures


def run_numpy() -> dict:
    """The numpy row's process: train until the held-out accuracy reaches TARGET; its accuracy and samples."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from faasgd import data, model

    shard = data.load_shard("fashion-mnist", "train")
    x, y = shard.x[:-HELD_OUT], shard.y[:-HELD_OUT]
    held_x, held_y = shard.x[-HELD_OUT:], shard.y[-HELD_OUT:]
    sizes, rng = (784, 100, 10), np.random.default_rng(0)
    weights = model.init_params(sizes, rng)
    grad = np.empty_like(weights)
    period, seen, accuracy = len(y) // 2, 0, 0.0
    with threadpool_limits(1):
        while accuracy < TARGET:
            order = rng.permutation(len(y))
            for first in range(0, len(order), BATCH):
                rows = order[first:first + BATCH]
                model.loss_and_grads(weights, sizes, x[rows], y[rows], "tanh", 0.0, rng, model.GradOut(grad))
                weights -= np.float32(LEARNING_RATE) * grad
                seen += len(rows)
                if seen % period < len(rows) or first + BATCH >= len(order):
                    accuracy = model.accuracy(weights, sizes, held_x, held_y)
                    if accuracy >= TARGET:
                        break
    return {"accuracy": float(accuracy), "samples": seen}


def summary(rounds: list[dict[str, float]]) -> dict[str, dict]:
    rows = {}
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        rows[name] = {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}
    rows["train / numpy"] = {"median": statistics.median(r["train"] / r["numpy"] for r in rounds)}
    rows["train: not training"] = {"median": statistics.median(r["train"] - r["train: job wall"] for r in rounds)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--role", choices=("numpy",), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "numpy":
        print(json.dumps(run_numpy()))
        return
    rounds = []
    for i in range(args.rounds):
        rounds.append(one_round())
        print(f"round {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in rounds[-1].items()), file=sys.stderr)
    rows = summary(rounds)
    if args.json:
        print(json.dumps({"clock": CLOCK, "rows": rows}))
        return
    print(f"whole commands, seconds ({CLOCK}; the 'job' rows: the job's own result, on the store's clock, Redis TIME "
          f"at 1 µs); median [min-max] of {args.rounds} round(s)")
    for name, row in rows.items():
        if name == "numpy accuracy":
            continue
        spread = f"  [{row['min']:.2f}-{row['max']:.2f}]" if "min" in row else ""
        print(f"  {name:<28} {row['median']:6.2f}{spread}")
    print(f"goals: up <= 1 s, down <= 1 s, train <= 1.5 x numpy (numpy reached {rows['numpy accuracy']['median']:.3f})")


if __name__ == "__main__":
    main()

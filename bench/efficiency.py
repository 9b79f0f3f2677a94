"""CPU-seconds per sample: a whole faasgd job, counted by the kernel, against one plain numpy process.

For each configuration (workers x rows a step x store x n_fetch = n_push x invocation mode) the bench runs
`faasgd train --direct` as a user does, inside a CPU account of its own (bench/cpu_account.py: a cgroup around the
command, its forkserver and workers, and the store server started for the job), and a plain one-process trainer
(the same 784-100-10 tanh MLP, batch 128, lr 0.1, the same 55,000 training rows, the same evaluations at the same
cadence as a job's stop rule: the 5,000 validation rows every half epoch of samples, and at each epoch's end the
validation and the 10,000 test rows) inside another. Two lengths of each (--short and --long epochs, target 1.0 so
nothing stops early):
- whole: the long job's CPU-seconds / its samples (interpreter start, imports, data loading, the job's set-up in it),
  over the plain process's whole figure at the same length;
- marginal: (long - short) CPU-seconds / (long - short) samples: what one more sample costs, start-up left out;
  over the plain process's marginal figure.
The store server's own figure (Redis INFO cpu, memcached stats rusage) is read too: its share of the job.
The job's own figure (its result's `cpu_s_per_sample`: the workers' counted CPU and the store servers' own count,
faasgd.job.result) is printed beside the kernel's.

Rounds are the outer loop; within a round the rows alternate (a drift of the machine falls on all). A row prints
the median over rounds and the [min-max] of its ratio. Clocks: CPU from the account's clock (printed); wall on
time.perf_counter around each command.

With 2 cores, more than 2 workers run time-sliced: their CPU-seconds are still theirs (the kernel counts
running time only), but waits and caches differ from W machines.

Usage: python bench/efficiency.py [--quick] [--workers 1,2,4] [--batches 128,64] [--stores redis,memcached]
       [--periods 10,1] [--modes loop,per-iteration] [--rounds 3] [--short 2] [--long 8] [--out results/efficiency]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cpu_account import CpuAccount  # beside this script

ROOT = Path(__file__).resolve().parent.parent
FAASGD = [str(Path(sys.executable).with_name("faasgd"))]  # the command as a user runs it, from this venv
LEARNING_RATE, PLAIN_BATCH, HIDDEN = 0.1, 128, (100,)


# -- the plain process ------------------------------------------------------------------------
def run_plain(epochs: int) -> dict:
    """One process, no store: plain minibatch SGD of 128 rows at lr 0.1 for `epochs` over the job's training rows,
    evaluating as a job's stop rule and epoch ends do. Its samples and final accuracy (stdout, JSON)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from faasgd import data, job, model
    from faasgd.config import load_config

    config = load_config({}, {"number_of_workers": 1})
    _, held = job.holdout(config)
    train = data.load_shard(config.dataset, "train", holdout=held)
    validation = data.load_shard(config.dataset, "validation", holdout=held)
    test = data.load_shard(config.dataset, "test")
    sizes = (train.x.shape[1], *HIDDEN, 10)
    rng = np.random.default_rng(0)
    weights = model.init_params(sizes, rng)
    grad = np.empty_like(weights)
    check_every, seen, next_check = len(train.y) // 2, 0, len(train.y) // 2
    accuracy = test_accuracy = 0.0
    with threadpool_limits(1):
        for _ in range(epochs):
            order = rng.permutation(len(train.y))
            for first in range(0, len(order), PLAIN_BATCH):
                rows = order[first:first + PLAIN_BATCH]
                model.loss_and_grads(weights, sizes, train.x[rows], train.y[rows], "tanh", 0.0, rng, grad_out=grad)
                weights -= np.float32(LEARNING_RATE) * grad
                seen += len(rows)
                if seen >= next_check:  # the stop rule's check
                    accuracy = model.accuracy(weights, sizes, validation.x, validation.y)
                    next_check += check_every
            accuracy = model.accuracy(weights, sizes, validation.x, validation.y)  # the epoch's end: the curves
            test_accuracy = model.accuracy(weights, sizes, test.x, test.y)
    return {"samples": seen, "accuracy": float(accuracy), "test_accuracy": float(test_accuracy)}


# -- measured runs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One configuration of the job."""

    workers: int
    batch: int  # rows a step per worker
    store: str  # redis | memcached
    period: int  # n_fetch = n_push
    mode: str  # loop | per-iteration

    @property
    def name(self) -> str:
        return f"{self.workers}x{self.batch} {self.store} n={self.period} {self.mode}"


def store_cpu_s(server) -> float | None:
    """The store server's own CPU-seconds so far, as it reports them (None when it cannot be read)."""
    try:
        if server.name == "redis":
            import redis

            info = redis.Redis.from_url(server.url).info("cpu")
            return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        from pymemcache.client.base import Client

        host, port = server.url.split("//")[1].split(":")
        stats = Client((host, int(port))).stats()
        return float(stats[b"rusage_user"]) + float(stats[b"rusage_system"])
    except Exception:
        return None


def run_job(cell: Cell, epochs: int, seed: int) -> dict:
    """`faasgd train --direct` of `cell` for `epochs`, with its store server, in an account of their own."""
    from faasgd.local.stores import start_memcached, start_redis

    with CpuAccount("faasgd-efficiency") as account:
        server = (start_redis if cell.store == "redis" else start_memcached)()
        try:
            account.adopt(server.pid)
            store_before = store_cpu_s(server)
            argv = [*FAASGD, "train", "--direct", "--store-url", server.url, "--workers", str(cell.workers),
                    "--batch-size", str(cell.batch), "--n-fetch", str(cell.period), "--n-push", str(cell.period),
                    "--invocation-mode", cell.mode, "--max-epochs", str(epochs), "--target-accuracy", "1.0",
                    "--seed", str(seed), "--json", "--quiet"]
            started = time.perf_counter()
            done = account.run(argv, capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                raise RuntimeError(f"{cell.name}: faasgd train failed ({done.returncode}): {done.stderr[-2000:]}")
            result = json.loads(done.stdout)
            store_after = store_cpu_s(server)
        finally:
            server.stop()
        cpu = account.cpu_s()
        clock = account.clock
    store = None if store_before is None or store_after is None else store_after - store_before
    return {"cpu_s": cpu, "wall_s": wall, "samples": result["samples"], "store_cpu_s": store, "clock": clock,
            "job_cpu_s": result.get("cpu_s"), "job_store_cpu_s": result.get("store_cpu_s"),
            "job_cpu_s_per_sample": result.get("cpu_s_per_sample"),
            "state": result["state"]}


def run_plain_measured(epochs: int) -> dict:
    with CpuAccount("faasgd-efficiency-plain") as account:
        started = time.perf_counter()
        done = account.run([sys.executable, __file__, "--role", "plain", "--long", str(epochs)], capture_output=True,
                           text=True, cwd=ROOT)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"the plain process failed: {done.stderr[-2000:]}")
        cpu = account.cpu_s()
    return {"cpu_s": cpu, "wall_s": wall, **json.loads(done.stdout)}


def per_sample(short: dict, long: dict) -> tuple[float, float]:
    """(marginal, whole) CPU-seconds per sample from a short and a long run of the same thing."""
    marginal = (long["cpu_s"] - short["cpu_s"]) / (long["samples"] - short["samples"])
    return marginal, long["cpu_s"] / long["samples"]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["plain"], help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="1 and 2 workers x 128, Redis, n = 10, loop, 1 round")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--batches", default="128,64")
    parser.add_argument("--stores", default="redis,memcached")
    parser.add_argument("--periods", default="10,1")
    parser.add_argument("--modes", default="loop,per-iteration")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=2, help="epochs of the short run (the marginal's base)")
    parser.add_argument("--long", type=int, default=8, help="epochs of the long run (the whole figure's)")
    parser.add_argument("--out", default="results/efficiency")
    args = parser.parse_args()
    if args.role == "plain":
        print(json.dumps(run_plain(args.long)))
        return
    if args.quick:
        args.workers, args.batches, args.stores, args.periods, args.modes, args.rounds = "1,2", "128", "redis", "10", \
            "loop", 1
    grid = [Cell(int(w), int(b), s, int(p), m) for w, b, s, p, m in itertools.product(
        args.workers.split(","), args.batches.split(","), args.stores.split(","), args.periods.split(","),
        args.modes.split(","))]
    print(f"machine: {os.cpu_count()} cores; {len(grid)} configurations x {args.rounds} rounds, {args.short} and "
          f"{args.long} epochs; more workers than cores run time-sliced")
    # unrecorded first runs: the data set's inflated cache, .pyc files and the page cache are made here, not in a row
    run_plain_measured(1)
    for store in sorted({cell.store for cell in grid}):
        run_job(Cell(1, 128, store, 10, "loop"), 1, 0)
    rows: dict[str, list[dict]] = {cell.name: [] for cell in grid}
    plain: list[dict] = []
    for round_index in range(args.rounds):
        order = grid[round_index % len(grid):] + grid[:round_index % len(grid)]
        short, long = run_plain_measured(args.short), run_plain_measured(args.long)
        plain.append({"short": short, "long": long})
        base_marginal, base_whole = per_sample(short, long)
        print(f"round {round_index + 1}: plain {base_marginal * 1e6:.2f} µs/sample marginal, {base_whole * 1e6:.2f} "
              f"whole ({long['cpu_s']:.2f} CPU-s, {long['wall_s']:.2f} s wall; clock: {short.get('clock', '')})",
              flush=True)
        for cell in order:
            short_job, long_job = run_job(cell, args.short, round_index), run_job(cell, args.long, round_index)
            marginal, whole = per_sample(short_job, long_job)
            row = {"marginal": marginal / base_marginal, "whole": whole / base_whole,
                   "marginal_us": marginal * 1e6, "whole_us": whole * 1e6, "short": short_job, "long": long_job}
            rows[cell.name].append(row)
            store = long_job["store_cpu_s"]
            print(f"  {cell.name}: marginal {row['marginal']:.2f} x, whole {row['whole']:.2f} x "
                  f"({long_job['cpu_s']:.2f} CPU-s, store {store if store is None else round(store, 2)}, "
                  f"{long_job['wall_s']:.2f} s wall; job says {long_job['job_cpu_s_per_sample']})", flush=True)
    print(f"\nclock: {run_clock()}")
    print("| configuration | marginal CPU-s/sample over plain | whole over plain | store's share (long) |")
    print("|---|---|---|---|")
    for cell in grid:
        got = rows[cell.name]
        shares = [r["long"]["store_cpu_s"] / r["long"]["cpu_s"] for r in got if r["long"]["store_cpu_s"] is not None]
        print(f"| {cell.name} | {spread([r['marginal'] for r in got])} | {spread([r['whole'] for r in got])} | "
              f"{spread(shares) if shares else '-'} |")
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "efficiency.json").write_text(json.dumps({"plain": plain, "rows": rows,
                                                     "cells": [asdict(c) for c in grid]}, indent=1))


def run_clock() -> str:
    with CpuAccount("faasgd-efficiency-probe") as account:
        return account.clock


if __name__ == "__main__":
    main()

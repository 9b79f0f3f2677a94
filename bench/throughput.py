"""Training throughput: the single-process numpy limit against 2 Downpour workers through real stores.

Prints, in one run on this machine:
  * single-process numpy samples/s for 784-100-10 (tanh, batch 128), for each BLAS thread count,
    and the best of them (the limit);
  * 2 worker processes (one BLAS thread each) through Redis and through Memcached at
    n_fetch = n_push in {1, 10, 1000}: aggregate training samples/s, its ratio to the limit and (`pair`) to two
    1-thread processes running at once (what two workers on two cores would be without any store); 1000 is more
    steps than a worker takes in the job (--epochs 2: 430 at 128 rows), so its workers exchange nothing but their
    first fetch and last push: the bound that cutting communication's cost could reach, with everything else
    (evaluations, records, the loop) as at 1 and 10;
  * where the cores went while both workers ran: the store server's cores and the whole machine's busy cores
    (testing/cpu_watch.py: CPU seconds from /proc over the workers' common wall window). With 2 cores, two
    workers computing at one process's rate need both cores; whatever the store and the communication
    threads use comes out of that, so `2 / (2 + store + rest)` bounds the ratio before any waiting;
  * where the workers' training time went (their records' `time_split` over their `train_s`, summed over both):
    `steps` the gradient steps' share, `batches` the minibatches' (gather and scaling); the rest is the loop,
    records, submitting store operations, waiting on them and the stop rule's checks.
Clocks: samples/s on each worker's own perf_counter (train_s); CPU on /proc (10 ms ticks) over time.time().

Each cell runs --rounds times (3 by default), the cells alternating within a round so a drift of the machine falls
on all; a row gives the medians and, for the pair ratio, the [min-max] over the rounds (one run of a cell moves
by up to 0.1 of the pair here: a single figure is not one to publish).
Usage: python bench/throughput.py [--dataset fashion-mnist] [--epochs 2] [--periods 1,10,1000] [--batch-size 128]
       [--rounds 3]
       (--batch-size 64: the rows a step of `bench/peers.py`'s faasgd-64 and direct-64 rows)
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
import types

import numpy as np
from threadpoolctl import threadpool_limits

from faasgd import data, job, model
from faasgd.config import load_config
from faasgd.cli import direct
from faasgd.local.services.stores import start_memcached, start_redis
from faasgd.store import open_store
from faasgd.testing.cpu_watch import CLOCK as CPU_CLOCK, CpuWatch


def single_process(dataset: str, steps: int, threads: int) -> float:
    """Plain minibatch SGD in this process, no store: samples per second."""
    sizes = model.layer_sizes(*_dims(dataset))
    shard = data.load_shard(dataset, "train", 0, 1)
    rng = np.random.default_rng(0)
    weights = model.init_params(sizes, rng)
    grad = np.empty_like(weights)
    order = rng.permutation(len(shard.y))
    batch = 128
    with threadpool_limits(threads):
        started = time.perf_counter()
        for step in range(steps):
            first = (step * batch) % (len(order) - batch)
            rows = order[first:first + batch]
            model.loss_and_grads(weights, sizes, shard.x[rows], shard.y[rows], "tanh", 0.0, rng, model.GradOut(grad))
            weights -= np.float32(0.1) * grad
        elapsed = time.perf_counter() - started
    return steps * batch / elapsed


def two_processes(dataset: str, steps: int) -> float:
    """Two single-process loops (1 BLAS thread each) at once, as two workers run: their samples/s summed."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2) as pool:
        return sum(pool.map(single_process, [dataset] * 2, [steps] * 2, [1] * 2))


def _dims(dataset: str) -> tuple[int, tuple[int, ...], int]:
    input_dim, n_classes = data.dataset_info(dataset)
    return input_dim, (100,), n_classes


def time_shares(workers: list[dict]) -> tuple[float, float]:
    """(steps, batches): the shares of the workers' training seconds (`train_s`, summed) their records' time_split
    puts in gradient steps (`compute`) and in minibatches (`batches`); nan when they trained for no time."""
    from faasgd.job.result import time_split  # the job's own sums of the records' parts

    train = sum(w["train_s"] for w in workers)
    if not train > 0:
        return float("nan"), float("nan")
    split = time_split(workers)
    return split["compute_s"] / train, split["batches_s"] / train


def two_workers(dataset: str, store_url: str, period: int, epochs: int, communication: str,
                store_pid: int, batch_size: int = 128) -> dict:
    """A real job with 2 worker processes; aggregate training samples/s over the workers' training time, and the
    cores the store and the machine used while both workers ran."""
    config = load_config({}, {
        "dataset": dataset, "number_of_workers": 2, "n_fetch": period, "n_push": period,
        "max_epochs": epochs, "target_accuracy": 1.0, "store_url": store_url, "batch_size": batch_size,
        "communication": communication,
    })
    with CpuWatch(store_pid) as watch:
        result = direct.train(config)
    workers = list(job.read_progress(open_store(store_url), result["job_id"], 2).values())
    train_s = max(w["train_s"] for w in workers)
    steps, batches = time_shares(workers)
    try:
        share = watch.cores(max(w["started_at"] for w in workers), min(w["finished_at"] for w in workers))
    except ValueError:  # the workers ran together too briefly to tell: the row prints nan, the table goes on
        share = types.SimpleNamespace(store=float("nan"), busy=float("nan"))
    return {
        "samples_per_s": sum(w["samples"] for w in workers) / train_s,
        "per_worker": [w["samples"] / w["train_s"] for w in workers],
        "store_cores": share.store, "busy_cores": share.busy,
        "steps_share": steps, "batches_share": batches,
        "conflicts": result["conflicts"],
        "staleness_p50": result["staleness_p50"],
        "accuracy": result["final_test_accuracy"],
    }


def shown(value: float | None, spec: str) -> str:
    """A figure as the table prints it; '-' where no round could tell it (summarise's None)."""
    return "-" if value is None else format(value, spec)


def summarise(rows: list[dict], pair: float) -> dict:
    """A cell's rounds: the median of every figure, per worker too, and the [min, max] of its pair ratio."""
    def median_of(key: str):
        # a job without pushes has no staleness (None), workers that ran together too briefly no cores (nan): the
        # median of the rounds that have the figure (a nan among them would sort anywhere and pick any value)
        values = [row[key] for row in rows if row[key] is not None and row[key] == row[key]]
        return statistics.median(values) if values else None

    median = {key: median_of(key) for key in rows[0] if key != "per_worker"}
    median["per_worker"] = [statistics.median(rates) for rates in zip(*(row["per_worker"] for row in rows))]
    ratios = [row["samples_per_s"] / pair for row in rows]
    return {**median, "pair_ratio": statistics.median(ratios), "pair_spread": (min(ratios), max(ratios))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--communication", default="background,coalesce",
                        help="comma-separated communication modes to measure (background, coalesce, blocking)")
    parser.add_argument("--periods", default="1,10,1000", help="comma-separated n_fetch = n_push values")
    parser.add_argument("--batch-size", type=int, default=128, help="the workers' rows a step (the limit: 128)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each cell, alternating; medians and spread")
    args = parser.parse_args()
    periods = [int(p) for p in args.periods.split(",")]

    print(f"machine: {os.cpu_count()} cores; dataset {args.dataset}; 784-100-10 tanh, batch 128 (workers: "
          f"{args.batch_size} rows a step each)")
    print(f"clocks: samples/s on each worker's perf_counter (train_s); cores: {CPU_CLOCK}")
    single_process(args.dataset, 100, 1)  # warm up
    limits = {t: single_process(args.dataset, args.steps, t) for t in (1, 2, 4, 8) if t <= (os.cpu_count() or 1)}
    for threads, rate in limits.items():
        print(f"single process, {threads} BLAS thread(s): {rate:,.0f} samples/s")
    best_threads = max(limits, key=limits.get)
    limit = limits[best_threads]
    print(f"limit (best thread count {best_threads}): {limit:,.0f} samples/s")
    pair = two_processes(args.dataset, args.steps)
    print(f"two 1-thread processes at once: {pair:,.0f} samples/s (the 'pair' ratio's denominator)\n")

    servers = [start_redis(), start_memcached()]
    try:
        cells = [(index, communication, period) for index in range(len(servers))
                 for communication, period in itertools.product(args.communication.split(","), periods)]
        runs: dict[tuple, list[dict]] = {cell: [] for cell in cells}
        for _ in range(max(1, args.rounds)):
            for index, communication, period in cells:
                server = servers[index]
                runs[(index, communication, period)].append(
                    two_workers(args.dataset, server.url, period, args.epochs, communication, server.pid,
                                args.batch_size))
        print(f"medians of {max(1, args.rounds)} round(s); pair: median [min-max]")
        print(f"{'store':<10} {'communication':<13} {'n_fetch=n_push':>14} {'samples/s':>11} {'ratio':>6} "
              f"{'pair':>16} {'conflicts':>9} {'staleness p50':>13} {'accuracy':>8} {'per worker':>15} "
              f"{'store cores':>11} {'busy cores':>10} {'steps':>5} {'batches':>7}")
        for (index, communication, period), rows in runs.items():
            server, row = servers[index], summarise(rows, pair)
            per_worker = "/".join(f"{r / 1000:.0f}k" for r in row["per_worker"])
            low, high = row["pair_spread"]
            pair_text = f"{row['pair_ratio']:.2f} [{low:.2f}-{high:.2f}]"
            print(f"{server.name:<10} {communication:<13} {period:>14} {row['samples_per_s']:>11,.0f} "
                  f"{row['samples_per_s'] / limit:>6.2f} {pair_text:>16} "
                  f"{row['conflicts']:>9g} {row['staleness_p50']!s:>13} {row['accuracy']:>8.4f} {per_worker:>15} "
                  f"{shown(row['store_cores'], '.2f'):>11} {shown(row['busy_cores'], '.2f'):>10} "
                  f"{shown(row['steps_share'], '.0%'):>5} {shown(row['batches_share'], '.0%'):>7}", flush=True)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()

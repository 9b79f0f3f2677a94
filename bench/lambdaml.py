"""LambdaML's comparison on this machine: algorithm x sync x channel x workers -> time and rounds to a target loss.

One table, one row per cell:
  task       higgs (Higgs-like, dense, lr), rcv1 (RCV1-like, sparse CSR, lr), blobs (KMeans)
  algorithm  grad_avg, model_avg, admm on the lr tasks; kmeans on blobs
  sync       reduce, reduce_scatter (faasgd.lambdaml.rounds.Exchange)
  channel    redis, memcached (real servers the bench starts on free loopback ports), s3 (moto's server),
             dynamodb (moto's server as DynamoDB: the channel's two tables, merged slices by conditional puts)
  workers    1, 2, 4: separate processes (multiprocessing, spawn), each with its own shard, its own store
             client and one BLAS thread
and for each: rounds and seconds to the task's target loss (the worker processes' round time: local compute
plus the exchange, the per-round evaluation excluded; the slowest worker), bytes moved per worker (written +
read, headers included, mean over the workers), seconds waiting at the barriers (mean), the final loss.

Loss and target: after every round each worker evaluates the shared model (grad_avg / model_avg's
parameters, ADMM's z, the centroids: the same bits on every worker) on the whole training set, so every
worker stops on the same round. lr: mean log-loss + l2/2 ||W||^2; target = F* + gap (F(0) - F*), F* from
L-BFGS in float64 (printed). kmeans: inertia per row; target = 1.01 x that of Lloyd run to convergence
from the same initial centroids. A cell that does not reach it in max_rounds shows ">max" and no time.

Downpour is not in the table: it trains the MLP through the product's worker, not these linear models,
so it has no row comparable with these (bench/throughput.py and bench/scaling.py measure it).

Usage: python bench/lambdaml.py [--quick] [--tasks higgs,rcv1,blobs] [--workers 1,2,4]
                                [--channels redis,memcached,s3,dynamodb] [--max-rounds N]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import time
import traceback
import uuid
from dataclasses import dataclass, field

import numpy as np

from faasgd.lambdaml.convex import kmeans, lr
from faasgd.lambdaml.convex.admm import AdmmSettings
from faasgd.data import generated
from faasgd.local.services.stores import start_memcached, start_redis
from faasgd.testing import s3_server
from faasgd.lambdaml.rounds import (Exchange, ExchangeConfig, RoundState, RoundStats, admm_round, admm_state, admm_z,
                           grad_avg_round, kmeans_round, model_avg_round)

BUCKET = "lambdaml"
CELL_TIMEOUT_S = 600.0  # the coordinator's wait for one cell's workers


@dataclass(frozen=True)
class Task:
    name: str
    algorithms: tuple[str, ...]
    rows: int  # training rows (the full run)
    quick_rows: int  # training rows with --quick
    seed: int
    l2: float = 1e-3  # lr's L2 strength
    gap: float = 0.1  # lr target: F* + gap (F(0) - F*)
    batch: int = 128  # grad_avg / model_avg minibatch per worker
    step: float = 0.3  # grad_avg / model_avg learning rate
    local_steps: int = 4  # model_avg's local steps per round
    admm: dict = field(default_factory=dict)  # admm_round's rho, local_steps, lr
    k: int = 16  # kmeans: centroids
    d: int = 4  # kmeans: features


TASKS = {
    "higgs": Task("higgs", ("grad_avg", "model_avg", "admm"), rows=100_000, quick_rows=8_000, seed=1,
                  step=0.3, batch=128, gap=0.1, admm=dict(rho=0.1, local_steps=5, lr=0.5)),
    "rcv1": Task("rcv1", ("grad_avg", "model_avg", "admm"), rows=20_000, quick_rows=4_000, seed=2,
                 step=8.0, batch=256, gap=0.5, admm=dict(rho=0.05, local_steps=10, lr=5.0)),
    "blobs": Task("blobs", ("kmeans",), rows=100_000, quick_rows=8_000, seed=3),
}


def load(task: Task, rows: int):
    """The task's training set (X, y): the same bytes in every process."""
    if task.name == "higgs":
        return generated.higgs_like(rows, task.seed)
    if task.name == "rcv1":
        return generated.rcv1_like(rows, task.seed)
    return generated.blobs(rows, task.seed, task.k, task.d)


def initial_centroids(task: Task, X) -> np.ndarray:
    return kmeans.init(X, task.k, np.random.default_rng(task.seed))


def evaluate(task: Task, model: np.ndarray, X, y) -> float:
    """The loss a cell's target is about, of a model every worker holds bit for bit."""
    if task.name == "blobs":
        return kmeans.inertia(model, X) / X.shape[0]
    return lr.loss_and_grad(model, X, y, task.l2)[0]


def target_of(task: Task, X, y) -> tuple[float, str]:
    """The task's target loss and how it was chosen (in float64, in the coordinator)."""
    if task.name == "blobs":
        C = initial_centroids(task, X)
        for _ in range(300):
            C = kmeans.merge([kmeans.partial(C, X)], C)
        best = kmeans.inertia(C, X) / X.shape[0]
        return 1.01 * best, f"inertia/row <= 1.01 x Lloyd's converged {best:.4f}"
    from scipy.optimize import minimize

    X64 = X.astype(np.float64)
    fit = minimize(lambda w: lr.loss_and_grad(w, X64, y, task.l2), np.zeros(X.shape[1] + 1), jac=True,
                   method="L-BFGS-B", options=dict(maxiter=5000, gtol=1e-10))
    start = float(np.log(2.0))  # the zero model
    return fit.fun + task.gap * (start - fit.fun), (f"loss <= F* + {task.gap} (F(0) - F*), F* = {fit.fun:.4f} "
                                                     f"(L-BFGS), F(0) = {start:.4f}, l2 = {task.l2}")


# --- the worker processes -------------------------------------------------------------------------------

_data: dict = {}
_spaces: dict = {}


def worker_main(worker_id: int, commands, results) -> None:
    """One worker process: runs its part of every cell it is sent until it gets None."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        while (spec := commands.get()) is not None:
            try:
                results.put((worker_id, run_cell(worker_id, spec)))
            except Exception:  # noqa: BLE001 - reported in the table's row
                results.put((worker_id, {"error": traceback.format_exc(limit=3)}))


def space_for(channel: dict):
    key = channel["name"]
    if key not in _spaces:
        if key == "s3":
            from faasgd.channels import S3Space, parse_s3_url

            _spaces[key] = S3Space(parse_s3_url(f"s3://{BUCKET}/bench", "s3_url"), channel["settings"], timeout_s=30)
        elif key == "dynamodb":
            from faasgd.channels import DynamoSpace

            _spaces[key] = DynamoSpace(channel["settings"], timeout_s=30)
        else:
            from faasgd.store import open_store

            _spaces[key] = open_store(channel["url"], timeout_s=30.0)
    return _spaces[key]


def run_cell(w: int, spec: dict) -> dict:
    """This worker's rounds of one cell until the shared model reaches the target (or max_rounds)."""
    task, n_workers = TASKS[spec["task"]], spec["workers"]
    if (task.name, spec["rows"]) not in _data:
        _data[(task.name, spec["rows"])] = load(task, spec["rows"])
    X, y = _data[(task.name, spec["rows"])]
    rows = np.array_split(np.arange(X.shape[0]), n_workers)[w]
    shard = (X[rows[0]:rows[-1] + 1], y[rows[0]:rows[-1] + 1])
    algorithm = spec["algorithm"]
    config = ExchangeConfig(pattern=spec["sync"], workers=n_workers, round_timeout_s=60.0, poll_s=0.001,
                            poll_max_s=0.02, op="sum" if algorithm == "kmeans" else "mean")
    exchange = Exchange(space_for(spec["channel"]), spec["job"], w, config)
    step, state, model_of = stepper(task, algorithm, shard, exchange, X, n_workers)
    totals, elapsed, loss = RoundStats(), 0.0, float("nan")
    while state.round_no < spec["max_rounds"]:
        started = time.perf_counter()
        outcome = step(state)
        elapsed += time.perf_counter() - started
        state, totals = outcome.state, totals + outcome.stats
        loss = evaluate(task, model_of(state), X, y)
        if loss <= spec["target"]:
            break
    return {"rounds": state.round_no, "reached": loss <= spec["target"], "time_s": elapsed, "loss": loss,
            "bytes": totals.bytes_written + totals.bytes_read, "wait_s": totals.wait_s}


def stepper(task: Task, algorithm: str, shard, exchange: Exchange, X, n_workers: int):
    """(one round from a state, the initial state, the shared model of a state) for this worker."""
    Xs, ys = shard
    if algorithm == "kmeans":
        return (lambda s: kmeans_round(s, shard, exchange)), RoundState(initial_centroids(task, X)), \
            (lambda s: s.params)
    if algorithm == "admm":
        weight = n_workers * Xs.shape[0] / X.shape[0]
        return (lambda s: admm_round(s, shard, lr, exchange, AdmmSettings(l2=task.l2, **task.admm), weight)), \
            admm_state(X.shape[1]), admm_z
    rows, batch = Xs.shape[0], min(task.batch, Xs.shape[0])

    def grad(params, i):
        first = (i * batch) % (rows - batch + 1)
        return lr.loss_and_grad(params, Xs[first:first + batch], ys[first:first + batch], task.l2)

    start = RoundState(lr.init(X.shape[1], 2))
    if algorithm == "grad_avg":
        return (lambda s: grad_avg_round(s, grad, exchange, lr=task.step)), start, (lambda s: s.params)
    return (lambda s: model_avg_round(s, grad, exchange, lr=task.step, local_steps=task.local_steps)), start, \
        (lambda s: s.params)


# --- the coordinator ------------------------------------------------------------------------------------

class Pool:
    """max(workers) spawned worker processes; a cell of N workers uses processes 0..N-1."""

    def __init__(self, size: int):
        ctx = mp.get_context("spawn")
        self.results = ctx.Queue()
        self.commands = [ctx.Queue() for _ in range(size)]
        self.procs = [ctx.Process(target=worker_main, args=(w, self.commands[w], self.results), daemon=True)
                      for w in range(size)]
        for p in self.procs:
            p.start()

    def run(self, spec: dict) -> list[dict]:
        n = spec["workers"]
        for w in range(n):
            self.commands[w].put(spec)
        got: dict[int, dict] = {}
        deadline = time.monotonic() + CELL_TIMEOUT_S
        while len(got) < n:
            try:
                w, result = self.results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"workers {sorted(set(range(n)) - set(got))} gave no result in {CELL_TIMEOUT_S} s")
            got[w] = result
        return [got[w] for w in range(n)]

    def close(self) -> None:
        for q in self.commands:
            q.put(None)
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.terminate()
                p.join(5)


def row(task: str, algorithm: str, sync: str, channel: str, n: int, results: list[dict], max_rounds: int) -> str:
    head = f"{task:<6} {algorithm:<9} {sync:<14} {channel:<9} {n:>7}"
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        return f"{head}  error: {errors[0].strip().splitlines()[-1]}"
    reached = all(r["reached"] for r in results)
    rounds = f"{results[0]['rounds']}" if reached else f">{max_rounds}"
    seconds = f"{max(r['time_s'] for r in results):.2f}" if reached else "-"
    mb = np.mean([r["bytes"] for r in results]) / 1e6
    wait = np.mean([r["wait_s"] for r in results])
    return f"{head} {rounds:>7} {seconds:>8} {mb:>10.3f} {wait:>7.2f} {results[0]['loss']:>9.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="higgs,rcv1,blobs")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--channels", default="redis,memcached,s3,dynamodb")
    parser.add_argument("--syncs", default="reduce,reduce_scatter")
    parser.add_argument("--quick", action="store_true", help="small data sets: the whole table in a minute or two")
    parser.add_argument("--max-rounds", type=int, default=None, help="rounds before a cell gives up (100 quick, 300)")
    args = parser.parse_args()
    tasks = [TASKS[t] for t in args.tasks.split(",")]
    workers = [int(w) for w in args.workers.split(",")]
    channels, syncs = args.channels.split(","), args.syncs.split(",")
    max_rounds = args.max_rounds or (100 if args.quick else 300)
    cores = os.cpu_count() or 1

    print(f"machine: {cores} cores; workers are spawned processes with one BLAS thread each; "
          f"max {max_rounds} rounds a cell")
    if max(workers) > cores:
        print(f"note: cells with more workers than the {cores} cores run time-sliced (their times include it)")
    print("downpour is not in the table: it trains the MLP through the product's worker, not these models")
    targets = {}
    for task in tasks:
        X, y = load(task, task.quick_rows if args.quick else task.rows)
        targets[task.name] = target_of(task, X, y)
        kind = "CSR" if hasattr(X, "tocsr") else "dense"
        print(f"task {task.name}: {X.shape[0]} rows x {X.shape[1]} ({kind}); target {targets[task.name][0]:.4f}: "
              f"{targets[task.name][1]}")

    servers, channel_specs = {}, {}
    try:
        if "redis" in channels:
            servers["redis"] = start_redis()
            channel_specs["redis"] = {"name": "redis", "url": servers["redis"].url}
        if "memcached" in channels:
            servers["memcached"] = start_memcached()
            channel_specs["memcached"] = {"name": "memcached", "url": servers["memcached"].url}
        if "s3" in channels:
            servers["s3"] = s3_server.start_s3()
            settings = s3_server.settings_for(servers["s3"])
            s3_server.make_bucket(settings, BUCKET)
            channel_specs["s3"] = {"name": "s3", "settings": settings}
        if "dynamodb" in channels:
            servers["dynamodb"] = s3_server.start_s3()  # moto's server answers DynamoDB's API too
            channel_specs["dynamodb"] = {"name": "dynamodb",
                                         "settings": s3_server.DynamoEndpoint.made(servers["dynamodb"]).settings}
        pool = Pool(max(workers))
        try:
            print(f"\n{'task':<6} {'algorithm':<9} {'sync':<14} {'channel':<9} {'workers':>7} {'rounds':>7} "
                  f"{'time_s':>8} {'MB/worker':>10} {'wait_s':>7} {'loss':>9}", flush=True)
            started = time.perf_counter()
            for task in tasks:
                for algorithm in task.algorithms:
                    for sync in syncs:
                        for channel in channels:
                            for n in workers:
                                spec = {"task": task.name, "algorithm": algorithm, "sync": sync, "workers": n,
                                        "rows": task.quick_rows if args.quick else task.rows,
                                        "channel": channel_specs[channel], "target": targets[task.name][0],
                                        "max_rounds": max_rounds, "job": "lml-" + uuid.uuid4().hex[:12]}
                                print(row(task.name, algorithm, sync, channel, n, pool.run(spec), max_rounds),
                                      flush=True)
            print(f"\n(table in {time.perf_counter() - started:.0f} s)")
        finally:
            pool.close()
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    main()

"""CPU-seconds per sample: a whole faasgd job, counted by the kernel, against one plain numpy process.

Four parts, each printed as a table (and written to --out as summary.md and efficiency.json):

1. cost. For each configuration (workers x rows a step x store x n_fetch = n_push x invocation mode x path) the bench
   runs the job as a user does inside a CPU account of its own (bench/cpu_account.py: a cgroup around every process
   of it), and a plain one-process trainer (the same 784-100-10 tanh MLP, batch 128, lr 0.1, the same 55,000
   training rows and the same evaluations at the same cadence as a job's stop rule: the 5,000 validation rows every
   half epoch of samples, and at each epoch's end the validation and the 10,000 test rows) inside another. Paths:
   `direct` is `faasgd train --direct` (the command, its forkserver, its worker processes and a store server
   started for the job); `runtime` is `faasgd train` through a local runtime (`faasgd up`, started once per store
   inside the account: gateway, queue, replicas, stores), whose CPU over the job is the account's difference
   around the command. Two lengths of each (--short and --long epochs, target 1.0 so nothing stops early):
   - whole: the long job's CPU-seconds / its samples (interpreter start, imports, data loading, the job's set-up
     in it; on the runtime path without `faasgd up` itself), over the plain process's whole figure;
   - marginal: (long - short) CPU-seconds / (long - short) samples: what one more sample costs, start-up left out,
     over the plain process's marginal figure, which is taken inside its one long run (its process clock at the
     ends of epoch --short and of the last: two plain processes' difference carried their start-ups' variance);
   - the store server's share of the long job (its own count, as the job reports it: `store_cpu_s`) and the job's
     own marginal figure (its result's cpu_s + store_cpu_s) over the kernel's: the instrument's reading checked.
2. split (--split): where the marginal CPU goes, from a sampling profiler (py-spy, every process of the job,
   `--rate` Hz, idle threads left out) over a short and a long job of one configuration: each part's samples in
   the long run less the short one's, as CPU-seconds per sample (efficiency_split.py); the store server from its
   own count; the residual (the kernel's marginal less all of them: what the profiler did not see) shown.
3. target (--target): samples to 0.85 validation accuracy at a global batch of 128 (W workers of 128 / W rows),
   over --seeds seeds, against one worker's; the marginal CPU ratio of that configuration; their product, the
   CPU-seconds to the target over one process's, and W / product, the speedup W machines could at best give.
4. container (--container): a job through `faasgd up --backend docker` and the deployed images
   (efficiency_container.py), its containers' CPU-seconds per sample over the plain process's whole figure.

Rounds are the outer loop; within a round the rows alternate, and each row's job runs beside a plain process of its
own (alternately before and after it), so a ratio compares runs minutes apart: this VM's rate moves by a third
within an hour (a plain process's marginal figure ranged 4.8-6.2 CPU-µs a sample in one bench run). A row prints
the median over rounds and the [min-max]. Clocks: CPU from the account's clock (printed: the kernel's, never a
sample); samples from the jobs' results; wall on time.perf_counter around each command. With 2 cores, more workers
than cores run time-sliced: their CPU-seconds are still theirs (the kernel counts running time only), but their
waits and caches are not W machines'.

Usage: python bench/efficiency.py [--quick] [--grid goals|full] [--rounds 3] [--short 2] [--long 8] [--split]
       [--target] [--target-workers 1,2,4] [--seeds 3] [--container] [--out results/efficiency]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cpu_account import CpuAccount  # beside this script

ROOT = Path(__file__).resolve().parent.parent
FAASGD = [str(Path(sys.executable).with_name("faasgd"))]  # the command as a user runs it, from this venv
LEARNING_RATE, PLAIN_BATCH, HIDDEN, TARGET = 0.1, 128, (100,), 0.85


# -- the plain process ------------------------------------------------------------------------
def run_plain(epochs: int, target: float = 1.0) -> dict:
    """One process, no store: plain minibatch SGD of 128 rows at lr 0.1 over the job's training rows for `epochs`
    (or until the validation accuracy reaches `target` at a check), evaluating as a job's stop rule and epoch ends
    do. Its samples, samples at the target (None if not reached) and final accuracies."""
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
    check_every, seen, next_check, reached = len(train.y) // 2, 0, len(train.y) // 2, None
    accuracy = test_accuracy = 0.0
    epoch_ends: list[tuple[int, float]] = []  # (samples, this process's CPU clock) at each epoch's end
    with threadpool_limits(1):
        for _ in range(epochs):
            order = rng.permutation(len(train.y))
            for first in range(0, len(order), PLAIN_BATCH):
                rows = order[first:first + PLAIN_BATCH]
                model.loss_and_grads(weights, sizes, train.x[rows], train.y[rows], "tanh", 0.0, rng, model.GradOut(grad))
                weights -= np.float32(LEARNING_RATE) * grad
                seen += len(rows)
                if seen >= next_check:  # the stop rule's check
                    accuracy = model.accuracy(weights, sizes, validation.x, validation.y)
                    next_check += check_every
                    if accuracy >= target:
                        reached = seen
                        break
            if reached is not None:
                break
            accuracy = model.accuracy(weights, sizes, validation.x, validation.y)  # the epoch's end: the curves
            test_accuracy = model.accuracy(weights, sizes, test.x, test.y)
            epoch_ends.append((seen, time.process_time()))
    return {"samples": seen, "samples_to_target": reached, "accuracy": float(accuracy),
            "test_accuracy": float(test_accuracy), "epoch_ends": epoch_ends}


def run_plain_measured(epochs: int, target: float = 1.0) -> dict:
    """run_plain in a process of its own, inside a CPU account: its figures with cpu_s and wall_s."""
    with CpuAccount("faasgd-efficiency-plain") as account:
        started = time.perf_counter()
        done = account.run([sys.executable, __file__, "--role", "plain", "--long", str(epochs), "--plain-target",
                            str(target)], capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"the plain process failed: {done.stderr[-2000:]}")
        cpu = account.cpu_s()
    return {"cpu_s": cpu, "wall_s": wall, **json.loads(done.stdout)}


# -- a job ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One configuration of the job."""

    workers: int
    batch: int  # rows a step per worker
    store: str  # redis | memcached
    period: int  # n_fetch = n_push
    mode: str  # loop | per-iteration
    path: str = "direct"  # direct | runtime

    @property
    def name(self) -> str:
        return f"{self.workers}x{self.batch} {self.store} n={self.period} {self.mode} {self.path}"

    def flags(self) -> list[str]:
        return ["--workers", str(self.workers), "--batch-size", str(self.batch), "--n-fetch", str(self.period),
                "--n-push", str(self.period), "--invocation-mode", self.mode]


def store_cpu_s(server) -> float | None:
    """A store server's own CPU-seconds so far, as it reports them (None when it cannot be read)."""
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


def store_in_bytes(server) -> int | None:
    """Bytes a store server has received from all its clients so far, by its own count (Redis INFO stats
    total_net_input_bytes, Memcached stats bytes_read; None when it cannot be read)."""
    try:
        if server.name == "redis":
            import redis

            return int(redis.Redis.from_url(server.url).info("stats")["total_net_input_bytes"])
        from pymemcache.client.base import Client

        host, port = server.url.split("//")[1].split(":")
        return int(Client((host, int(port))).stats()[b"bytes_read"])
    except Exception:
        return None


def besides_push(run: dict, short: dict | None = None, sent: str = "tx_bytes") -> float | None:
    """Bytes a push interval besides the push itself: what was sent (`sent`: the workers' sockets' count,
    `tx_bytes`, or the server's, `store_in_bytes`) less every attempt's update, over the pushes; with `short`, the
    difference of the two runs (the command's set-up and end, in the server's count, left out). A race lost resends
    the whole update here (every configuration's 79,510 floats fit one chunk): its record and commands count as
    besides. Exact at 1 worker (no races)."""
    names = ("pushes", "conflicts", sent)
    if any(r.get(name) is None for r in (run, short or run) for name in (*names, "push_bytes")):
        return None
    pushes, conflicts, total = (run[name] - (short[name] if short is not None else 0) for name in names)
    if pushes <= 0:
        return None
    update = run["push_bytes"] / run["pushes"]
    return (total - update * (pushes + conflicts)) / pushes


def job_figures(cpu: float, wall: float, done: subprocess.CompletedProcess, what: str, clock: str) -> dict:
    if done.returncode != 0:
        raise RuntimeError(f"{what}: faasgd train failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return {"cpu_s": cpu, "wall_s": wall, "samples": result["samples"], "clock": clock, "state": result["state"],
            "samples_to_target": result.get("samples_to_target"), "job_cpu_s": result.get("cpu_s"),
            "job_store_cpu_s": result.get("store_cpu_s"), "job_cpu_s_per_sample": result.get("cpu_s_per_sample"),
            **{name: result.get(name) for name in ("tx_bytes", "push_bytes", "pushes", "conflicts")}}


def run_job(cell: Cell, epochs: int, seed: int, target: float = 1.0, extra: tuple[str, ...] = ()) -> dict:
    """`faasgd train --direct` of `cell` for `epochs` (or to `target`), with a store server of its own, in an account
    of their own; `store_cpu_s` is the server's own count over the run."""
    from faasgd.local.services.stores import start_memcached, start_redis

    with CpuAccount("faasgd-efficiency") as account:
        server = (start_redis if cell.store == "redis" else start_memcached)()
        try:
            account.adopt(server.pid)
            before, received = store_cpu_s(server), store_in_bytes(server)
            argv = [*FAASGD, "train", "--direct", "--store-url", server.url, *cell.flags(), *extra,
                    "--max-epochs", str(epochs), "--target-accuracy", str(target), "--seed", str(seed), "--json",
                    "--quiet"]
            started = time.perf_counter()
            done = account.run(argv, capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - started
            after, received_after = store_cpu_s(server), store_in_bytes(server)
        finally:
            server.stop()
        figures = job_figures(account.cpu_s(), wall, done, cell.name, account.clock)
    figures["store_cpu_s"] = None if before is None or after is None else after - before
    figures["store_in_bytes"] = None if received is None or received_after is None else received_after - received
    return figures


class Runtime:
    """A local runtime (`faasgd up`) inside a CPU account of its own: jobs through it are counted by the account's
    difference around each (the runtime's idle work during the job included, its start-up not)."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="faasgd-efficiency-runtime-")
        self.account = CpuAccount("faasgd-efficiency-runtime")
        up = self.account.run([*FAASGD, "up", "--dir", self.folder, "--filter", "emnist-*", "--wait"],
                              capture_output=True, text=True, cwd=ROOT)
        if up.returncode != 0:
            self.close()
            raise RuntimeError(f"faasgd up failed: {up.stderr[-2000:]}")

    def run_job(self, cell: Cell, epochs: int, seed: int, target: float = 1.0) -> dict:
        store = [] if cell.store == "redis" else ["--store", cell.store]  # redis: the functions' own store_url
        argv = [*FAASGD, "train", "--dir", self.folder, *store, *cell.flags(), "--max-epochs", str(epochs),
                "--target-accuracy", str(target), "--seed", str(seed), "--json", "--quiet"]
        before, started = self.account.cpu_s(), time.perf_counter()
        done = self.account.run(argv, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - started
        figures = job_figures(self.account.cpu_s() - before, wall, done, cell.name, self.account.clock)
        figures["store_cpu_s"] = figures["job_store_cpu_s"]  # the server is the runtime's: the job's own reading
        return figures

    def close(self) -> None:
        subprocess.run([*FAASGD, "down", "--dir", self.folder], capture_output=True, cwd=ROOT)
        self.account.close()


class Jobs:
    """Runs a cell's job on its path: direct jobs each with a store server of their own, runtime jobs through one
    runtime kept for the whole bench (started on first use)."""

    def __init__(self):
        self.runtime: Runtime | None = None

    def run(self, cell: Cell, epochs: int, seed: int, target: float = 1.0) -> dict:
        if cell.path == "direct":
            return run_job(cell, epochs, seed, target)
        if self.runtime is None:
            self.runtime = Runtime()
        return self.runtime.run_job(cell, epochs, seed, target)

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()


# -- the figures ------------------------------------------------------------------------------
def per_sample(short: dict, long: dict) -> tuple[float, float]:
    """(marginal, whole) CPU-seconds per sample from a short and a long run of the same thing."""
    marginal = (long["cpu_s"] - short["cpu_s"]) / (long["samples"] - short["samples"])
    return marginal, long["cpu_s"] / long["samples"]


def plain_per_sample(run: dict, short_epochs: int) -> tuple[float, float]:
    """(marginal, whole) CPU-seconds per sample of one plain run: the marginal inside it, between the ends of epoch
    `short_epochs` and of its last epoch on its own process clock (time.process_time), so that no start-up enters
    it (two plain processes' difference carried their start-ups' variance: 2.9-6.1 µs a sample between runs)."""
    (short_samples, short_cpu), (long_samples, long_cpu) = run["epoch_ends"][short_epochs - 1], run["epoch_ends"][-1]
    return (long_cpu - short_cpu) / (long_samples - short_samples), run["cpu_s"] / run["samples"]


def job_marginal(short: dict, long: dict) -> float | None:
    """The job's own marginal CPU-seconds per sample (its workers' and its store's counts), or None."""
    def own(run):
        return None if run["job_cpu_s"] is None else run["job_cpu_s"] + (run["job_store_cpu_s"] or 0.0)
    if own(short) is None or own(long) is None:
        return None
    return (own(long) - own(short)) / (long["samples"] - short["samples"])


def spread(values: list[float], digits: int = 2) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


GOALS = {  # configuration name -> the goal for the marginal ratio
    "1x128": 1.10, "2x128": 1.20, "2x64": 1.40, "4x128": 1.30,
}


def goal_of(cell: Cell) -> float | None:
    if cell.mode == "per-iteration":
        return 1.35
    return GOALS.get(f"{cell.workers}x{cell.batch}") if cell.period == 10 else None


def grid(kind: str) -> list[Cell]:
    """The configurations: `goals` (each goal's row, both stores; per-iteration and n = 1 beside them) or `full`
    (1, 2, 4 workers x 128, 64 rows x both stores x n = 10, 1 x loop, per-iteration; the direct path)."""
    if kind == "full":
        return [Cell(w, b, s, p, m) for w, b, s, p, m in itertools.product(
            (1, 2, 4), (128, 64), ("redis", "memcached"), (10, 1), ("loop", "per-iteration"))]
    cells = [Cell(w, b, s, 10, "loop") for (w, b), s in itertools.product(
        ((1, 128), (2, 128), (2, 64), (4, 128)), ("redis", "memcached"))]
    cells += [Cell(2, 128, "redis", 1, "loop"), Cell(2, 128, "redis", 10, "per-iteration", "runtime"),
              Cell(2, 128, "memcached", 10, "per-iteration", "runtime"), Cell(2, 128, "redis", 10, "loop", "runtime")]
    return cells


def measure_cost(cells: list[Cell], rounds: int, short_epochs: int, long_epochs: int, jobs: Jobs) -> tuple[dict, list]:
    """Part 1: every cell's short and long job, each beside a short and a long plain process of its own (the pair's
    ratio: a drift of the machine within the minutes a row takes falls on both), the cells and the order within a
    pair alternating between rounds; (rows by cell, plain runs)."""
    rows: dict[str, list[dict]] = {cell.name: [] for cell in cells}
    plain: list[dict] = []
    for index in range(rounds):
        print(f"round {index + 1}", flush=True)
        for cell in cells[index % len(cells):] + cells[:index % len(cells)]:
            pair = [lambda: run_plain_measured(long_epochs),
                    lambda: (jobs.run(cell, short_epochs, index), jobs.run(cell, long_epochs, index))]
            first, second = pair[index % 2](), pair[1 - index % 2]()
            long, (short_job, long_job) = (first, second) if index % 2 == 0 else (second, first)
            plain.append(long)
            base_marginal, base_whole = plain_per_sample(long, short_epochs)
            marginal, whole = per_sample(short_job, long_job)
            own = job_marginal(short_job, long_job)
            store = long_job["store_cpu_s"]
            fixed = long_job["cpu_s"] - marginal * long_job["samples"]  # what the samples do not explain: start, end
            row = {"fixed_cpu_s": fixed, "marginal": marginal / base_marginal, "whole": whole / base_whole, "marginal_us": marginal * 1e6,
                   "whole_us": whole * 1e6, "plain_marginal_us": base_marginal * 1e6,
                   "job_over_kernel": None if own is None else own / marginal,
                   "store_share": None if store is None else store / long_job["cpu_s"],
                   "besides_push": besides_push(long_job),
                   "besides_push_store": besides_push(long_job, short_job, "store_in_bytes"),
                   "short": short_job, "long": long_job}
            rows[cell.name].append(row)
            print(f"  {cell.name}: marginal {row['marginal']:.2f} x ({row['marginal_us']:.2f} against "
                  f"{row['plain_marginal_us']:.2f} µs), whole {row['whole']:.2f} x, {long_job['cpu_s']:.2f} CPU-s "
                  f"({fixed:.2f} fixed), "
                  f"{long_job['wall_s']:.2f} s wall, job's own marginal / kernel's "
                  f"{'-' if own is None else round(row['job_over_kernel'], 3)}", flush=True)
    return rows, plain


def cost_table(cells: list[Cell], rows: dict, plain: list, short_epochs: int) -> list[str]:
    marginal_us = [plain_per_sample(p, short_epochs)[0] * 1e6 for p in plain]
    whole_us = [plain_per_sample(p, short_epochs)[1] * 1e6 for p in plain]
    fixed = [p["cpu_s"] - plain_per_sample(p, short_epochs)[0] * p["samples"] for p in plain]
    lines = [f"plain process: {spread(marginal_us)} CPU-µs a sample marginal, {spread(whole_us)} whole (every pair's), "
             f"{spread(fixed)} CPU-s fixed (its start and end: the long run's CPU less its samples' marginal cost)",
             "", "| configuration | CPU-µs a sample, marginal | over the plain process's (pairs) | goal | whole over "
             "plain's | fixed CPU-s (start and end) | store's share (long) | job's own marginal / kernel's | bytes a push interval besides the push "
             "(workers' sockets, long run; the server's count, marginal) |", "|---|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        got = rows[cell.name]
        goal = goal_of(cell)
        lines.append(f"| {cell.name} | {spread([r['marginal_us'] for r in got])} | {spread([r['marginal'] for r in got])}"
                     f" | {'-' if goal is None else f'<= {goal:.2f}'} | {spread([r['whole'] for r in got])} | "
                     f"{spread([r['fixed_cpu_s'] for r in got])} | "
                     f"{spread([r['store_share'] for r in got])} | {spread([r['job_over_kernel'] for r in got], 3)} | "
                     f"{spread([r['besides_push'] for r in got], 0)}; {spread([r['besides_push_store'] for r in got], 0)} |")
    return lines


def measure_target(workers: list[int], seeds: int, short_epochs: int, long_epochs: int, rounds: int,
                   marginal_by_cell: dict[str, list[float]]) -> list[str]:
    """Part 3: samples to TARGET at a global batch of 128 against one worker's, and the product with the marginal
    CPU ratio at that configuration (measured here where part 1 did not)."""
    cells = {w: Cell(w, 128 // w, "redis", 10, "loop") for w in workers}
    reached: dict[int, list[int]] = {w: [] for w in workers}
    cpu_to_target: dict[int, list[float]] = {w: [] for w in workers}
    plain = [run_plain_measured(30, TARGET) for _ in range(min(seeds, 2))]
    for seed in range(seeds):
        for w in workers:
            run = run_job(cells[w], 30, seed, TARGET)
            if run["samples_to_target"]:
                reached[w].append(run["samples_to_target"])
                cpu_to_target[w].append(run["cpu_s"])
            print(f"  to {TARGET}: {cells[w].name} seed {seed}: samples {run['samples_to_target']}, "
                  f"{run['cpu_s']:.2f} CPU-s whole", flush=True)
    for w in workers:  # the marginal ratio of each configuration
        if cells[w].name not in marginal_by_cell:
            ratios = []
            for index in range(rounds):
                base = plain_per_sample(run_plain_measured(long_epochs), short_epochs)[0]
                ratios.append(per_sample(run_job(cells[w], short_epochs, index), run_job(cells[w], long_epochs, index))[0]
                              / base)
            marginal_by_cell[cells[w].name] = ratios
    one = statistics.median(reached[1]) if reached.get(1) else None
    plain_cpu = statistics.median(p["cpu_s"] for p in plain)
    plain_samples = statistics.median(p["samples_to_target"] or 0 for p in plain)
    lines = [f"plain process to {TARGET}: {plain_samples:,.0f} samples, {plain_cpu:.2f} CPU-s whole", "",
             f"| workers x rows | reached | samples to {TARGET} / 1 worker's | marginal CPU / plain's | product "
             f"(CPU to target / one process's) | W / product | whole job's CPU to target / plain's |",
             "|---|---|---|---|---|---|---|"]
    for w in workers:
        samples = reached[w]
        ratio = statistics.median(samples) / one if samples and one else None
        marginal = statistics.median(marginal_by_cell[cells[w].name])
        product = None if ratio is None else ratio * marginal
        whole = statistics.median(cpu_to_target[w]) / plain_cpu if cpu_to_target[w] else None
        lines.append(f"| {w} x {128 // w} | {len(samples)}/{seeds} | {'-' if ratio is None else f'{ratio:.2f}'} | "
                     f"{marginal:.2f} | {'-' if product is None else f'{product:.2f}'} | "
                     f"{'-' if product is None else f'{w / product:.2f}'} | {'-' if whole is None else f'{whole:.2f}'} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["plain"], help=argparse.SUPPRESS)
    parser.add_argument("--plain-target", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 and 2 workers x 128, Redis, n = 10, loop, direct; 1 and 2 epochs; 1 round")
    parser.add_argument("--grid", choices=["goals", "full"], default="goals")
    parser.add_argument("--only", default="", help="comma-separated substrings: keep the configurations naming one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=2, help="epochs of the short run (the marginal's base)")
    parser.add_argument("--long", type=int, default=8, help="epochs of the long run (the whole figure's)")
    parser.add_argument("--split", action="store_true",
                        help="part 2: where the marginal CPU goes (py-spy) in the first direct configuration selected "
                             "(2x128 Redis n = 10 loop when none)")
    parser.add_argument("--no-cost", dest="cost", action="store_false", help="skip part 1")
    parser.add_argument("--rate", type=int, default=200, help="the split's samples a second per thread")
    parser.add_argument("--target", action="store_true", help="part 3: samples and CPU to 0.85 at a global batch 128")
    parser.add_argument("--target-workers", default="1,2,4", help="part 3's worker counts (8 on request)")
    parser.add_argument("--seeds", type=int, default=3, help="part 3's seeds per worker count")
    parser.add_argument("--container", action="store_true", help="part 4: a job in the deployed containers")
    parser.add_argument("--out", default="results/efficiency")
    args = parser.parse_args()
    if args.role == "plain":
        print(json.dumps(run_plain(args.long, args.plain_target)))
        return
    cells = grid(args.grid)
    if args.quick:
        cells, args.rounds, args.short, args.long = [Cell(1, 128, "redis", 10, "loop"), Cell(2, 128, "redis", 10, "loop")], \
            1, 1, 3
    if args.only:
        cells = [c for c in cells if any(part in c.name for part in args.only.split(","))]
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {len(cells)} configurations x "
          f"{args.rounds} rounds, {args.short} and {args.long} epochs; more workers than cores run time-sliced")
    with CpuAccount("faasgd-efficiency-probe") as probe:
        print(f"clocks: CPU {probe.clock}; wall time.perf_counter", flush=True)
    # unrecorded first runs: the data set's inflated cache, .pyc files and the page cache are made here, not in a row
    run_plain_measured(1)
    for store in sorted({cell.store for cell in cells}):
        run_job(Cell(1, 128, store, 10, "loop"), 1, 0)
    report: list[str] = ["# faasgd's CPU per sample against one plain process", "",
                         f"{os.cpu_count()} cores; CPU: the kernel's ({probe.clock}); {args.rounds} rounds, "
                         f"{args.short} and {args.long} epochs; medians [min-max]", ""]
    jobs = Jobs()
    marginal_by_cell: dict[str, list[float]] = {}
    output: dict = {"cells": [asdict(c) for c in cells]}
    try:
        if cells and args.cost:
            rows, plain = measure_cost(cells, args.rounds, args.short, args.long, jobs)
            output.update(rows=rows, plain=plain)
            marginal_by_cell = {name: [r["marginal"] for r in got] for name, got in rows.items()}
            report += ["## Cost", "", *cost_table(cells, rows, plain, args.short), ""]
        if args.split:
            import efficiency_split

            split = next((c for c in cells if c.path == "direct"), Cell(2, 128, "redis", 10, "loop"))
            lines, output["split"] = efficiency_split.measure(split, args.short, args.long, args.rate)
            report += [f"## Where the marginal CPU goes ({split.name})", "", *lines, ""]
        if args.target:
            workers = [int(w) for w in args.target_workers.split(",")]
            report += [f"## To {TARGET} at a global batch of 128", "",
                       *measure_target(workers, args.seeds, args.short, args.long, args.rounds, marginal_by_cell), ""]
        if args.container:
            import efficiency_container

            report += ["## In the deployed containers", "", *container_lines(efficiency_container, args.long), ""]
    finally:
        jobs.close()
    print("\n" + "\n".join(report))
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.md").write_text("\n".join(report) + "\n")
    (out / "efficiency.json").write_text(json.dumps(output, indent=1, default=str))


def container_lines(module, epochs: int) -> list[str]:
    """Part 4's rows: a 2-worker job in the containers against the plain process at the same length (whole)."""
    plain = run_plain_measured(epochs)
    row = module.container_row(workers=2, epochs=epochs)
    per = row["cpu_s"] / row["samples"]
    base = plain["cpu_s"] / plain["samples"]
    return ["| path | BLAS threads a replica | CPU-s | samples | CPU-µs a sample | whole / plain's | wall s |",
            "|---|---|---|---|---|---|---|",
            f"| containers (faasgd up --backend docker) | {row['blas_threads']} | {row['cpu_s']:.2f} | "
            f"{row['samples']:,} | {per * 1e6:.2f} | {per / base:.2f} | {row['wall_s']:.2f} |"]


if __name__ == "__main__":
    main()

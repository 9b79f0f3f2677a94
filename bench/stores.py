"""Stores: Redis against Memcached, training samples/s at 1, 2 and 4 workers, loop and per-iteration mode.

Every run is a real job on the local runtime (`faasgd up`, as ./test.sh runs them): emnist-setup creates
the job and fans the workers out, the runtime's replicas train (one per worker, at most 5), the store is
named per run (`store: redis | memcached`, the functions' configured stores). Rounds are the outer loop
(round r: seed r - 1), the stores alternate inside each round, so the machine's drift falls on both.

Beside what each job reports (its result's samples, wall_s and samples/s, on the job's own clocks:
docs/reference/job-records.md), the bench measures the same job independently: this process's
time.perf_counter() from sending the emnist-setup request to the first status read that shows the
result ("outer" seconds; late by at most one status poll), and samples / outer seconds. The ratios
job / outer show how far the job's figures are from what its caller saw: outer also holds the setup
call, the workers' start and data loading and the last poll, so wall_s / outer stays below 1 and
samples/s job / outer above 1, both further from 1 the shorter the job; a ratio of 0, or a wall_s
above outer s, is a clock that is wrong. Per configuration: the median over rounds and the spread
[min-max]; then, per mode and worker count, Memcached's median samples/s over Redis's.

More workers than cores run time-sliced (this machine has 2): samples/s at 4 workers measure the sharing.
Usage: python bench/stores.py [--workers 1,2,4] [--modes loop,per-iteration] [--stores redis,memcached]
                              [--rounds 3] [--train-samples 0] [--max-epochs 3] [--no-warm-up]
                              [--out results/stores]   (from the repository root)
Before the rounds, one unrecorded job per store warms the replicas up (--no-warm-up skips it). Writes
runs.csv (one row per run) and summary.md (the table and its legend) under --out.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import tempfile
import time
from pathlib import Path

from faasgd.batch.matrix import Configuration, Matrix, parse_matrix
from faasgd.batch.targets import LocalTarget, Target, replicas_for
from faasgd.errors import ConfigError
from faasgd.local.services.stores import free_port
from faasgd.openfaas import SETUP_FUNCTION, json_answer, wait_for_job

STORES = ("redis", "memcached")
MODES = ("loop", "per-iteration")
COLUMNS = ("store", "invocation_mode", "workers", "round", "seed", "job_id", "state", "error", "samples",
           "max_concurrent_workers", "job_wall_s", "job_samples_per_s", "outer_s", "outer_samples_per_s",
           "wall_ratio", "rate_ratio")
FIGURES = ("job_samples_per_s", "job_wall_s", "outer_s", "outer_samples_per_s", "wall_ratio", "rate_ratio")


def parse_list(text: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    """A comma-separated flag's values; argparse's error (it names the flag) on an empty or unknown one."""
    values = [v.strip() for v in text.split(",")]
    if not all(values):
        raise argparse.ArgumentTypeError(f"empty value in {text!r}")
    for value in values:
        if allowed is not None and value not in allowed:
            raise argparse.ArgumentTypeError(f"{value!r} is not one of {', '.join(allowed)}")
    return values


def parse_workers(text: str) -> list[int]:
    try:
        workers = [int(v) for v in parse_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if min(workers) < 1:
        raise argparse.ArgumentTypeError(f"every value must be at least 1, got {text!r}")
    return workers


def build_matrix(args: argparse.Namespace) -> Matrix:
    """Workers x modes x stores, stores varying fastest; checked by the functions' own config parser."""
    document = {
        "name": "stores", "rounds": args.rounds,
        "fixed": {"dataset": args.dataset, "target_accuracy": 1.0, "max_epochs": args.max_epochs,
                  "train_samples": args.train_samples, "batch_size": 128, "n_fetch": 10, "n_push": 10},
        "matrix": {"number_of_workers": args.workers, "invocation_mode": args.modes, "store": args.stores},
    }
    return parse_matrix(document, "stores", max_runs=10_000)


def run_timed(configuration: Configuration, round_number: int, target: Target, timeout_s: float,
              poll_s: float) -> dict:
    """One job, timed from outside: a record of COLUMNS; a failed run is a record, never an exception."""
    body = {**configuration.overrides(), "seed": round_number - 1}
    workers = int(body["number_of_workers"])
    record = {"store": body["store"], "invocation_mode": body["invocation_mode"], "workers": workers,
              "round": round_number, "seed": body["seed"], "job_id": None}
    try:
        target.set_replicas(replicas_for(workers))  # before the clock starts: scaling is not the job's
        started = time.perf_counter()
        answer = json_answer(target.gateway.invoke(SETUP_FUNCTION, body), SETUP_FUNCTION)
        record["job_id"] = answer["job_id"]
        status = wait_for_job(lambda: target.gateway.job_status(answer["status_query"]), timeout_s, poll_s=poll_s)
        outer_s = time.perf_counter() - started
    except Exception as error:  # recorded; the bench goes on
        return {**record, "state": "failed", "error": f"{type(error).__name__}: {error}"}
    result = status.get("result") or {"state": "failed", "error": f"still running after {timeout_s:g} s"}
    return {**record, **measure(result, outer_s)}


def measure(result: dict, outer_s: float) -> dict:
    """The job's own figures beside the outer ones, and their ratios (job / outer)."""
    samples = int(result.get("samples") or 0)
    wall_s = float(result.get("wall_s") or 0.0)
    rate = float(result.get("samples_per_s") or 0.0)
    outer_rate = samples / outer_s
    return {"state": result.get("state"), "error": result.get("error"), "samples": samples,
            "max_concurrent_workers": result.get("max_concurrent_workers"),
            "job_wall_s": wall_s, "job_samples_per_s": rate, "outer_s": outer_s, "outer_samples_per_s": outer_rate,
            "wall_ratio": wall_s / outer_s, "rate_ratio": rate / outer_rate if outer_rate else None}


def summarise(runs: list[dict]) -> list[dict]:
    """One row per (workers, mode, store): how many runs were done, and each figure's values over them."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["workers"], run["invocation_mode"], run["store"]), []).append(run)
    rows = []
    for (workers, mode, store), group in groups.items():
        done = [r for r in group if r.get("state") == "done"]
        row = {"workers": workers, "invocation_mode": mode, "store": store, "done": len(done), "runs": len(group)}
        for figure in FIGURES:
            row[figure] = [r[figure] for r in done if r.get(figure) is not None]
        rows.append(row)
    return rows


def spread(values: list[float]) -> str:
    """The median and [min-max] of a figure over rounds, in a width that suits its size."""
    if not values:
        return "-"
    digits = 0 if statistics.median(values) >= 100 else 2 if statistics.median(values) >= 1 else 3
    show = lambda v: f"{v:,.{digits}f}"  # noqa: E731
    return show(statistics.median(values)) if len(values) == 1 else \
        f"{show(statistics.median(values))} [{show(min(values))}-{show(max(values))}]"


def table(rows: list[dict]) -> list[str]:
    """The summary as a markdown table, one line per configuration."""
    lines = ["| store | mode | workers | done | job samples/s | job wall_s | outer s | outer samples/s "
             "| wall_s / outer | samples/s job / outer |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['store']} | {r['invocation_mode']} | {r['workers']} | {r['done']}/{r['runs']} | "
                     + " | ".join(spread(r[figure]) for figure in FIGURES) + " |")
    return lines


def compare(rows: list[dict]) -> list[str]:
    """Per (mode, workers) run on both stores: Memcached's median samples/s over Redis's, job's and outer."""
    by = {(r["invocation_mode"], r["workers"], r["store"]): r for r in rows}
    lines = []
    for (mode, workers, store), row in by.items():
        redis = by.get((mode, workers, "redis"))
        if store != "memcached" or redis is None:
            continue
        ratios = [ratio(row[figure], redis[figure]) for figure in ("job_samples_per_s", "outer_samples_per_s")]
        lines.append(f"memcached / redis samples/s, {mode}, {workers} worker(s): job {ratios[0]}, outer {ratios[1]}")
    return lines


def ratio(values: list[float], base: list[float]) -> str:
    if not values or not base or not statistics.median(base):
        return "-"
    return f"{statistics.median(values) / statistics.median(base):.2f}"


def legend(poll_s: float) -> list[str]:
    """Which clock each column is on, and what the worker counts mean on this machine."""
    cores = os.cpu_count() or 1
    return [
        "Median over rounds [min-max]; done: runs that ended in state done (the figures are theirs).",
        "job samples/s, job wall_s: the job's result, on the job's own clocks (docs/reference/job-records.md).",
        "outer s: this process's time.perf_counter(), from the emnist-setup request to the first status read "
        f"showing the result (read every {poll_s:g} s); outer samples/s: the job's samples / outer s.",
        "wall_s / outer, samples/s job / outer: the job's figure over the outer one, per run.",
        f"This machine has {cores} core(s): more than {cores} workers run time-sliced, so their samples/s "
        "measure the sharing.",
    ]


def write_outputs(out: Path, runs: list[dict], lines: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "runs.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({key: run.get(key) for key in COLUMNS} for run in runs)
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def warm_up(matrix: Matrix, target: Target, timeout_s: float, poll_s: float) -> None:
    """One unrecorded job per store (the first configuration of each): replicas import and load the data
    set's files before any timed job, so round 1 is not the only round paying for it."""
    firsts: dict[str, Configuration] = {}
    for configuration in matrix.configurations:
        firsts.setdefault(configuration.store, configuration)
    for store, configuration in firsts.items():
        run = run_timed(configuration, 1, target, timeout_s, poll_s)
        print(f"warm-up, {store} (not recorded): " + describe(run), flush=True)


def run_all(matrix: Matrix, target: Target, timeout_s: float, poll_s: float) -> list[dict]:
    runs = []
    total = matrix.rounds * len(matrix.configurations)
    for round_number in range(1, matrix.rounds + 1):
        for configuration in matrix.configurations:
            run = run_timed(configuration, round_number, target, timeout_s, poll_s)
            runs.append(run)
            print(f"[{len(runs)}/{total}] {run['store']} {run['invocation_mode']} {run['workers']} worker(s) "
                  f"round {round_number}: " + describe(run), flush=True)
    return runs


def describe(run: dict) -> str:
    if run.get("state") != "done":
        return f"FAILED: {run.get('error')}"
    return (f"{run['samples']:,} samples; job {run['job_samples_per_s']:,.0f} samples/s, "
            f"wall_s {run['job_wall_s']:.3f}; outer {run['outer_s']:.3f} s, {run['outer_samples_per_s']:,.0f} samples/s")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=parse_workers, default="1,2,4")
    parser.add_argument("--modes", type=lambda text: parse_list(text, MODES), default=",".join(MODES))
    parser.add_argument("--stores", type=lambda text: parse_list(text, STORES), default=",".join(STORES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-samples", type=int, default=0, help="training rows (0: all)")
    parser.add_argument("--max-epochs", type=int, default=3, help="epochs of every job (its target is 1.0)")
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--poll-s", type=float, default=0.05, help="how often the job's status is read")
    parser.add_argument("--run-timeout", type=float, default=1800.0, help="seconds a run may take")
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="skip the unrecorded first job per store")
    parser.add_argument("--stack", default="stack.yml")
    parser.add_argument("--out", default="results/stores")
    args = parser.parse_args()
    if not 0 < args.poll_s <= 5:
        parser.error(f"--poll-s: must be in (0, 5], got {args.poll_s}")
    if args.run_timeout <= 0:
        parser.error(f"--run-timeout: must be above 0, got {args.run_timeout}")
    return args


def main() -> None:
    args = parse_args()
    try:
        matrix = build_matrix(args)  # every configuration checked before the runtime starts
    except ConfigError as error:
        raise SystemExit(f"stores.py: error: {error}") from None
    target = LocalTarget(args.stack, tempfile.mkdtemp(prefix="faasgd-stores-"), free_port())
    target.start()
    try:
        if args.warm_up:
            warm_up(matrix, target, args.run_timeout, args.poll_s)
        runs = run_all(matrix, target, args.run_timeout, args.poll_s)
    finally:
        target.stop()
    rows = summarise(runs)
    lines = [f"{args.dataset}, {args.train_samples or 'all'} training rows, {args.max_epochs} epoch(s), batch 128, "
             "n_fetch = n_push = 10", ""] + table(rows) + [""] + compare(rows) + [""] + legend(args.poll_s)
    print("\n" + "\n".join(lines))
    write_outputs(Path(args.out), runs, lines)
    print(f"wrote {Path(args.out) / 'runs.csv'} and {Path(args.out) / 'summary.md'}")


if __name__ == "__main__":
    main()

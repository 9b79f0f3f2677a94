"""The graph inspector's data set, made here: generated architectures x settings, each job run and profiled.

    python bench/inspector_data.py results/inspector.jsonl [--quick] [--architectures 40] [--settings 3]

Architectures: MLPs of 1-8 hidden layers, each layer's width drawn from WIDTHS (seeded: the same list every time),
on Fashion-MNIST's first TRAIN_SAMPLES rows. Settings, in two families (Driple's "DT settings"):
    source  Redis, 2 workers         target  Memcached, 4 workers
and within a family n_fetch = n_push in PERIODS and the batch size in BATCHES, `--settings` of those six drawn
per architecture and family. Each job runs `faasgd train --direct`'s way (the workers as processes forked
from the forkserver, against a redis-server and a memcached this script starts and stops), MAX_EPOCHS epochs to
target 1.0 (every epoch runs: a run long enough to profile, and the same length for every architecture), the
profile at PROFILE_HZ; its row is the run record `faasgd predict` learns from (config keys and the result's
figures at the top level: the 12 Driple figures of faasgd.profile.figures, CPU utilisation and RSS standing in
for Driple's GPU utilisation and memory; no GPU here) plus `key`, `family` and `architecture`.

Resumable: rows are appended (one JSON line each, flushed) and a job whose key is in the file already, done, is
skipped, so an interrupted run is continued by running it again (a failed job is run again; readers take the done
rows). Both stores are emptied after each job (`flush`). The cnn is not in the data set: its two layouts
(cnn_arch lenet, mobilenet) are the only ones a job can train, and one TensorFlow job costs ~20x an MLP's here
(graphs of any cnn layout are built: faasgd.profile.graph.cnn_graph).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Iterator

import numpy as np
import redis
from pymemcache.client.base import Client

from faasgd.cli import direct, forkserver
from faasgd.config import load_config
from faasgd.functions import orchestrate
from faasgd.local.services.stores import start_memcached, start_redis
from faasgd.profile.figures import MEASURES
from faasgd.store import open_store

WIDTHS = (16, 32, 64, 128, 256, 512)
DEPTHS = (1, 8)  # hidden layers, inclusive
PERIODS = (1, 5, 20)
BATCHES = (32, 128)
FAMILIES = {"source": ("redis", 2), "target": ("memcached", 4)}  # store, workers
TRAIN_SAMPLES, MAX_EPOCHS, PROFILE_HZ = 6000, 2, 20.0
QUICK = {"architectures": 10, "settings": 2}
PLACEHOLDER_URLS = {"redis": "redis://127.0.0.1:6379/0", "memcached": "memcached://127.0.0.1:11211"}
RESULT_KEYS = MEASURES + ("cpu_s", "wall_s", "samples", "samples_per_s", "state", "error")


def architectures(count: int, seed: int = 0) -> list[tuple[int, ...]]:
    """`count` distinct hidden_sizes, depth and widths drawn with `seed` (the first ones are the same for any
    count: a larger set extends a smaller one)."""
    rng, found = np.random.default_rng(seed), []
    while len(found) < count:
        depth = int(rng.integers(DEPTHS[0], DEPTHS[1] + 1))
        sizes = tuple(int(w) for w in rng.choice(WIDTHS, size=depth))
        if sizes not in found:
            found.append(sizes)
    return found


def plan(count: int, settings: int, seed: int = 0) -> Iterator[dict]:
    """Every job of the data set: per architecture and family, `settings` of PERIODS x BATCHES (seeded)."""
    rng = np.random.default_rng(seed + 1)
    grid = [(p, b) for p in PERIODS for b in BATCHES]
    for arch in architectures(count, seed):
        for family, (store, workers) in FAMILIES.items():
            for i in rng.permutation(len(grid))[:settings]:
                period, batch = grid[int(i)]
                yield {"family": family, "architecture": list(arch), "store": store, "number_of_workers": workers,
                       "n_fetch": period, "n_push": period, "batch_size": batch}


def key_of(job: dict) -> str:
    return json.dumps(job, sort_keys=True)


def done_keys(path: str) -> set[str]:
    """The keys of the jobs in `path` that ended done (a failed one is run again, its row left beside)."""
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {row["key"] for row in map(json.loads, filter(str.strip, f)) if row.get("state") == "done"}


def flush(servers: dict) -> None:
    """Empty both stores: an ended job's state is never read again, and a memcached full of them evicts a running
    job's weight chunks (the job fails: "weight chunk vanished")."""
    redis.Redis(port=servers["redis"].port).flushdb()
    Client(("127.0.0.1", servers["memcached"].port)).flush_all(noreply=False)


def run_one(job: dict, urls: dict[str, str]) -> dict:
    """Run one job of the plan to its end; its row (a run record, config keys at the top level)."""
    config = load_config({}, {
        "dataset": "fashion-mnist", "train_samples": TRAIN_SAMPLES, "max_epochs": MAX_EPOCHS, "target_accuracy": 1.0,
        "profile_hz": PROFILE_HZ, "hidden_sizes": job["architecture"], "store_url": urls[job["store"]],
        "number_of_workers": job["number_of_workers"], "n_fetch": job["n_fetch"], "n_push": job["n_push"],
        "batch_size": job["batch_size"]})
    store = open_store(config.store_url)
    job_id = orchestrate.create_job(store, config)
    result = direct.run_job(config, store, job_id, 600.0).get("result") or {}
    record = {k: v for k, v in config.to_dict().items() if k != "store_url"}
    record.update({k: result.get(k) for k in RESULT_KEYS})
    record.update(key=key_of(job), family=job["family"], architecture=job["architecture"], store=job["store"],
                  store_url=PLACEHOLDER_URLS[job["store"]])  # the port of a server gone is no setting
    return record


def generate(path: str, count: int, settings: int) -> tuple[int, int]:
    """Run every job of the plan not yet in `path`, appending its row; (jobs run, jobs skipped)."""
    jobs = list(plan(count, settings))
    seen = done_keys(path)
    todo = [j for j in jobs if key_of(j) not in seen]
    if not todo:
        return 0, len(jobs)
    forkserver.start()
    servers = {"redis": start_redis(), "memcached": start_memcached()}
    try:
        urls = {name: server.url for name, server in servers.items()}
        with open(path, "a") as out:
            for n, job in enumerate(todo, 1):
                started = time.perf_counter()
                row = run_one(job, urls)
                out.write(json.dumps(row, sort_keys=True) + "\n")
                out.flush()
                flush(servers)
                print(f"[{n}/{len(todo)}] {row['state']} {job['family']} {job['architecture']} period "
                      f"{job['n_fetch']} batch {job['batch_size']}: {time.perf_counter() - started:.1f} s "
                      f"(perf_counter)", file=sys.stderr, flush=True)
    finally:
        for server in servers.values():
            server.stop()
    return len(todo), len(jobs) - len(todo)


def read(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the data set (JSON lines), appended to")
    parser.add_argument("--quick", action="store_true", help=f"a small set: {QUICK}")
    parser.add_argument("--architectures", type=int, default=40)
    parser.add_argument("--settings", type=int, default=3, help="settings per architecture and family (<= 6)")
    args = parser.parse_args()
    count, settings = (QUICK["architectures"], QUICK["settings"]) if args.quick else (args.architectures, args.settings)
    ran, skipped = generate(args.path, count, settings)
    print(f"{ran} jobs run, {skipped} already in {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

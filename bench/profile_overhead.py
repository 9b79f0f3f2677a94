"""What resource sampling costs a worker: samples/s with profile_hz 0 against 10 (and 100), one worker on Redis.

One worker in this process (sgd.run_worker, no gateway) trains a fixed number of epochs on Fashion-MNIST
(or synthetic) against a redis-server this script starts; the settings alternate, `--repeats` times each,
so slow drift of the machine spreads over all of them. Prints each setting's median samples/s and its
cost against profile_hz 0 (the issue's budget: at most 2%), and, since run-to-run noise on a shared machine is
larger than that, the direct bound too: the CPU time of one sample (two threads' clocks, /proc/self/statm, the
byte counters, the accumulators) times the rate, as a share of one core.
Usage: python bench/profile_overhead.py [--dataset fashion-mnist] [--epochs 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from threadpoolctl import threadpool_limits

from faasgd import job
from faasgd.config import load_config
from faasgd.local.services.stores import start_redis
from faasgd.profile.sampler import Sampler
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store


def samples_per_s(url: str, dataset: str, epochs: int, hz: float) -> float:
    config = load_config({}, {"dataset": dataset, "number_of_workers": 1, "max_epochs": epochs,
                              "target_accuracy": 1.0, "store_url": url, "profile_hz": hz})
    store = open_store(url)
    job_id = job.create_job(store, config)
    record = run_worker(Call(config, store, job_id, 0))
    store.close()
    return record["samples_per_s"]


def seconds_per_sample(count: int = 20_000) -> float:
    """CPU seconds one sample costs, the worker's two threads watched (this one, twice)."""
    ident = threading.get_ident()
    sampler = Sampler(10.0, lambda: [ident, ident])
    started = time.thread_time()
    for _ in range(count):
        sampler.sample()
    return (time.thread_time() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    settings = (0.0, 10.0, 100.0)
    redis = start_redis()
    try:
        found: dict[float, list[float]] = {hz: [] for hz in settings}
        with threadpool_limits(1):  # as the local runtime's replicas run
            for _ in range(args.repeats):
                for hz in settings:
                    found[hz].append(samples_per_s(redis.url, args.dataset, args.epochs, hz))
    finally:
        redis.stop()
    per_sample = seconds_per_sample()
    print(f"one sample: {per_sample * 1e6:.1f} us of CPU; at 10 Hz {per_sample * 10:.4%} of a core, "
          f"at 100 Hz {per_sample * 100:.4%}")
    base = statistics.median(found[0.0])
    print(f"{'profile_hz':>10} {'samples/s (median)':>19} {'cost':>7}   runs")
    for hz in settings:
        median = statistics.median(found[hz])
        print(f"{hz:>10g} {median:>19,.0f} {1 - median / base:>7.1%}   " + " ".join(f"{v:,.0f}" for v in found[hz]))


if __name__ == "__main__":
    main()

"""Profile one Downpour worker's hot path (cProfile) against a real redis-server.

Prints the functions that cost the most own time over a few epochs of Fashion-MNIST at
n_fetch = n_push = N (default 10), so copies, allocations, serialisation and store round trips
show up next to the numpy work.
Usage: python bench/profile_worker.py [--period 10] [--epochs 2] [--top 20]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

from threadpoolctl import threadpool_limits

from faasgd import job
from faasgd.config import load_config
from faasgd.local.services.stores import start_redis
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--period", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    server = start_redis()
    try:
        config = load_config({}, {"number_of_workers": 1, "n_fetch": args.period, "n_push": args.period,
                                  "max_epochs": args.epochs, "target_accuracy": 1.0, "store_url": server.url})
        store = open_store(config.store_url)
        job_id = job.create_job(store, config)
        profile = cProfile.Profile()
        with threadpool_limits(1):
            profile.enable()
            final = run_worker(Call(config, store, job_id, 0))
            profile.disable()
        print(f"{final['samples']:,} samples, {final['samples_per_s']:,.0f} samples/s in training epochs, "
              f"{final['pushes']} pushes, {final['fetches']} fetches")
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    finally:
        server.stop()


if __name__ == "__main__":
    main()

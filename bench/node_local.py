"""Staleness and accuracy of the node-local topology against direct fetches from the global store.

2 worker processes, Fashion-MNIST, global Redis; node-local fetches from a Memcached cache
refreshed every `local_refresh_s`. Prints per configuration: staleness p50/p99 (global versions
pushed by others since the parameters a worker stepped from), fetches, time to 0.85, final accuracy.
Usage: python bench/node_local.py [--dataset fashion-mnist] [--epochs 4]
"""

from __future__ import annotations

import argparse

from faasgd.config import load_config
from faasgd.cli import direct
from faasgd.local.services.stores import start_memcached, start_redis


def run(dataset: str, epochs: int, overrides: dict) -> dict:
    config = load_config({}, {"dataset": dataset, "number_of_workers": 2, "max_epochs": epochs,
                              "target_accuracy": 0.85, **overrides})
    return direct.train(config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    redis, memcached = start_redis(), start_memcached()
    try:
        rows = [("global (direct)", {"store_url": redis.url})]
        for refresh in (0.05, 0.5, 2.0):
            rows.append((f"node-local {refresh:g} s", {"store_url": redis.url, "store_topology": "node-local",
                                                        "local_store_url": memcached.url,
                                                        "local_refresh_s": refresh}))
        print(f"{'topology':<20} {'stal p50':>8} {'stal p99':>8} {'fetches':>7} {'to 0.85 (s)':>11} {'final acc':>9}")
        for name, overrides in rows:
            r = run(args.dataset, args.epochs, overrides)
            ttt = r["time_to_target_s"]
            print(f"{name:<20} {r['staleness_p50']!s:>8} {r['staleness_p99']!s:>8} {r['fetches']:>7} "
                  f"{'-' if ttt is None else f'{ttt:.1f}':>11} {r['final_test_accuracy']:>9.4f}", flush=True)
    finally:
        redis.stop()
        memcached.stop()


if __name__ == "__main__":
    main()

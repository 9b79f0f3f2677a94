"""Stacking ensemble training on the local runtime: transfer x trainers x concurrency -> time of each phase.

Starts its own runtime from the repository's stack.yml on a free port (stopped at the end), runs the
default vSwarm job (300 x 1024, LinearSVR, Lasso, RandomForest(2, 2), KNeighbors(20)) once to warm the
replicas, then each combination `--rounds` times, and prints the median of each phase (upload, train,
reduce, meta-train, as the driver times them) and the total, like vSwarm's reports, with the scores.
Usage: python bench/stacking.py [--trainers 4,16] [--rounds 1] [--store redis]   (from the repository root)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from faasgd.local import control
from faasgd.local.stores import free_port
from faasgd.stacking.flow import PHASES


def run(gateway, transfer: str, trainers: int, concurrent: bool, store: str) -> dict:
    answer = gateway.invoke("stacking-driver", {"transfer": transfer, "trainers_num": trainers,
                                                "concurrent_training": concurrent, "store": store}, timeout_s=600)
    if answer.status != 200:
        raise RuntimeError(f"{transfer} x {trainers}: HTTP {answer.status} {answer.body[:300]!r}")
    return answer.json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainers", default="4,16")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--store", default="redis", help="the store transfer=store (and every job record) uses")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="faasgd-bench-")
    state, _ = control.up("stack.yml", free_port(), directory)
    try:
        gateway = control.client(state, timeout_s=600)
        run(gateway, "store", 4, True, args.store)  # warm: imports scikit-learn in each replica
        header = f"{'transfer':<9}{'trainers':>9}{'concurrent':>11}" + "".join(f"{p:>14}" for p in PHASES)
        print(header + f"{'total_s':>10}   ensemble / best base")
        for transfer in ("inline", "store"):
            for trainers in (int(t) for t in args.trainers.split(",")):
                for concurrent in (True, False):
                    results = [run(gateway, transfer, trainers, concurrent, args.store) for _ in range(args.rounds)]
                    phases = [statistics.median(r["phases"][p] for r in results) for p in PHASES]
                    total = statistics.median(r["total_s"] for r in results)
                    last = results[-1]
                    print(f"{transfer:<9}{trainers:>9}{str(concurrent).lower():>11}"
                          + "".join(f"{v:>14.3f}" for v in phases)
                          + f"{total:>10.3f}   {last['ensemble_score']:.3f} / {last['best_base_score']:.3f}", flush=True)
    finally:
        control.down(directory)


if __name__ == "__main__":
    main()

"""Stacking ensemble training on the local runtime: transfer x trainers x concurrency -> time of each phase.

Starts its own runtime from the repository's stack.yml on a free port (stopped at the end), runs the
default vSwarm job (300 x 1024, LinearSVR, Lasso, RandomForest(2, 2), KNeighbors(20)) once to warm the
replicas, then each combination `--rounds` times, and prints the median of each phase (upload, train,
reduce, meta-train, as the driver times them) and the total, like vSwarm's reports, with the scores.
With `s3` among `--transfers`, the bench starts moto's S3 server (faasgd.testing.s3_server: a local
S3-compatible server on loopback, signatures checked) and gives the stacking functions its settings as a
user would: env s3_url and the s3-* secrets.
Usage: python bench/stacking.py [--trainers 4,16] [--transfers inline,store,s3] [--rounds 1] [--store redis]
(from the repository root)
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
from pathlib import Path

from faasgd.local.lifecycle import control
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.services.stores import free_port
from faasgd.stacking.flow import PHASES

ROOT = Path(__file__).resolve().parents[1]


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
    parser.add_argument("--transfers", default="inline,store,s3")
    args = parser.parse_args()
    transfers = args.transfers.split(",")
    with contextlib.ExitStack() as stack:
        directory = tempfile.mkdtemp(prefix="faasgd-bench-")
        stack_file = "stack.yml"
        if "s3" in transfers:
            stack_file = stack.enter_context(s3_runtime(Path(directory)))
        bench(stack_file, directory, transfers, args)


@contextlib.contextmanager
def s3_runtime(directory: Path):
    """moto on loopback with a bucket, its secrets in the runtime's folder; the S3-enabled stack file."""
    from faasgd.testing.s3_server import S3Endpoint, enable_auth, make_bucket, preload_secrets, s3_stack, start_s3

    server = start_s3()
    try:
        settings = enable_auth(server)
        make_bucket(settings, "faasgd-bench")
        preload_secrets(directory, S3Endpoint(server, settings, "faasgd-bench"))
        yield s3_stack(ROOT, directory / "stack", "s3://faasgd-bench/stacking", drain_s=5)
    finally:
        server.stop()


def bench(stack_file: str, directory: str, transfers: list[str], args) -> None:
    state, _ = control.up(UpOptions(stack_file, free_port(), directory))
    try:
        gateway = control.client(state, timeout_s=600)
        run(gateway, "store", 4, True, args.store)  # warm: imports scikit-learn in each replica
        header = f"{'transfer':<9}{'trainers':>9}{'concurrent':>11}" + "".join(f"{p:>14}" for p in PHASES)
        print(header + f"{'total_s':>10}   ensemble / best base")
        for transfer in transfers:
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

"""The ~1 GB data set: 2 Downpour workers on fashion-mnist-x21, each worker's peak RSS against its bound.

Each worker is its own process (one BLAS thread) that makes only its shard of the augmented set
(data/augmented.py) and trains through a real redis-server; at its end it reports its peak RSS (the
kernel's VmHWM, not a sample). Printed per worker:
  * peak RSS, and the bound 1.5 x (its shard as uint8 + 3 x the parameters (float32) + the interpreter
    with numpy, measured as the peak RSS of a bare python that imported numpy);
  * seconds to make the shard (load) and to train;
and for the job: the test accuracy (Fashion-MNIST's own test set) of the job's model after --epochs.
Goal (issue 15): every worker's peak RSS <= its bound, and test accuracy >= --target (0.84) after 3 epochs.
setup's admission (functions/admission.py) is asked too, with emnist-train's memory_limit (1Gi).

Usage: python bench/big_dataset.py [--factor 21] [--workers 2] [--epochs 3]   (--factor 2: a quick check)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from faasgd import data, job, model
from faasgd.config import load_config
from faasgd.data import augmented

BARE_NUMPY = "import numpy; print(open('/proc/self/status').read())"


def peak_rss(status: str | None = None) -> int:
    """VmHWM (the process's peak resident memory) in bytes, from /proc/self/status or its text."""
    text = status if status is not None else open("/proc/self/status").read()
    line = next(line for line in text.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def build_config(args: argparse.Namespace, store_url: str):
    return load_config({}, {"dataset": f"fashion-mnist-x{args.factor}", "number_of_workers": args.workers,
                            "max_epochs": args.epochs, "target_accuracy": 1.0, "store_url": store_url,
                            "hidden_sizes": args.hidden, "batch_size": 128, "learning_rate": args.learning_rate,
                            "update_rule": args.update_rule, "profile_hz": 0})


def worker(args: argparse.Namespace) -> None:
    """One worker process: train, then print what it measured as one JSON line."""
    from threadpoolctl import threadpool_limits

    from faasgd.functions.workloads import run_worker
    from faasgd.worker.invocation import Call
    from faasgd.store import open_store

    threadpool_limits(1)
    config = build_config(args, args.store_url)
    started = time.perf_counter()
    record = run_worker(Call(config, open_store(args.store_url), args.job_id, args.worker))
    print(json.dumps({"worker": args.worker, "peak_rss": peak_rss(), "wall_s": time.perf_counter() - started,
                      "train_s": record["train_s"], "samples": record["samples"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=int, default=21, choices=augmented.FACTORS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--hidden", default="100")
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--update-rule", default="sum", help="sum: each worker's steps count in full")
    parser.add_argument("--target", type=float, default=0.84, help="the test accuracy to reach")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # the worker processes' own flags
    parser.add_argument("--job-id", help=argparse.SUPPRESS)
    parser.add_argument("--store-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        return worker(args)

    from faasgd.functions import admission
    from faasgd.local.services.stores import start_redis
    from faasgd.store import open_store

    bare = peak_rss(subprocess.run([sys.executable, "-c", BARE_NUMPY], capture_output=True, text=True,
                                   check=True).stdout)
    server = start_redis()
    try:
        config = build_config(args, server.url)
        store = open_store(server.url)
        needs = admission.check_job(config, {"memory_limit": "1Gi"}, "redis")  # TooLarge (413) if it would not fit
        train_rows, held = job.holdout(config)
        params = model.param_count(job.network_sizes(config))
        print(f"{config.dataset}: {data.count_rows(config.dataset, 'train'):,} training rows "
              f"({data.count_rows(config.dataset, 'train') * 784 / 1e9:.2f} GB as uint8), {held:,} held out; "
              f"{params:,} parameters; bare python + numpy {bare / 2**20:.0f} MiB; "
              f"admission: {needs['worker_bytes'] / 2**20:,.0f} MiB a worker, under memory_limit=1Gi")
        job_id = job.create_job(store, config)
        command = [sys.executable, __file__, "--factor", str(args.factor), "--workers", str(args.workers),
                   "--epochs", str(args.epochs), "--hidden", args.hidden, "--learning-rate", str(args.learning_rate),
                   "--update-rule", args.update_rule, "--job-id", job_id, "--store-url", server.url]
        started = time.perf_counter()
        processes = [subprocess.Popen(command + ["--worker", str(i)], stdout=subprocess.PIPE, text=True)
                     for i in range(args.workers)]
        reports = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in processes]
        wall = time.perf_counter() - started
        status = job.read_status(store, job_id)
        result = status.get("result") or {}
        ok = True
        for report in reports:
            start, stop = data.shard_range(train_rows, report["worker"], args.workers)
            shard = (stop - start) * 784
            bound = 1.5 * (shard + 3 * params * 4 + bare)
            ok &= report["peak_rss"] <= bound
            print(f"worker {report['worker']}: shard {stop - start:,} rows = {shard / 2**20:,.0f} MiB; peak RSS "
                  f"{report['peak_rss'] / 2**20:,.0f} MiB, bound {bound / 2**20:,.0f} MiB "
                  f"({report['peak_rss'] / bound:.2f} of it); load {report['wall_s'] - report['train_s']:.0f} s, "
                  f"train {report['train_s']:.0f} s, {report['samples']:,} samples")
        accuracy = result.get("final_test_accuracy")
        reached = accuracy is not None and accuracy >= args.target
        print(f"job {status['state']} in {wall:.0f} s: validation accuracy {result.get('final_validation_accuracy')}, "
              f"test accuracy {accuracy} after {args.epochs} epoch(s) "
              f"(target {args.target}: {'reached' if reached else 'NOT reached'}); memory bound "
              f"{'met by every worker' if ok else 'EXCEEDED'}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()

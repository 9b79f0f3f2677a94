"""`faasgd status [JOB] [--watch]`: the local runtime's functions, or a job's progress and result."""

from __future__ import annotations

import json
import os

from faasgd import job
from faasgd.commands.common import gateway, raise_for_answer
from faasgd.commands.train import watch
from faasgd.config import load_config
from faasgd.display import summary, worker_line


def run(args) -> int:
    if not args.job_id:
        return runtime_status(args)
    if args.direct:  # straight from the store, no gateway
        from faasgd.store import open_store

        config = load_config(os.environ, {"store_url": args.store_url} if args.store_url else {})
        status = job.read_status(open_store(config.store_url), args.job_id)
    else:
        query = {"job_id": args.job_id, **({"store_url": args.store_url} if args.store_url else {})}
        status = watch(gateway(args), query, args.timeout, show=args.watch) if args.watch else raise_for_answer(
            gateway(args).invoke("emnist-setup", method="GET", query=query), "emnist-setup")
    progress = dict(enumerate(status["workers"]))
    if args.json:
        print(json.dumps(status, sort_keys=True))
    elif status["result"]:
        print(summary(status["result"], progress))
    else:
        print(f"job {args.job_id}: running")
        print("\n".join(worker_line(i, r, status["config"]["max_epochs"]) for i, r in progress.items()))
    return 0


def runtime_status(args) -> int:
    client = gateway(args)
    functions = raise_for_answer(client.request("GET", "/system/functions"), "gateway")
    if args.json:
        print(json.dumps(functions, sort_keys=True))
        return 0
    print(f"gateway {client.url}")
    print(f"{'function':<16} {'replicas':>8} {'available':>9} {'invocations':>11}")
    for f in functions:
        print(f"{f['name']:<16} {f['replicas']:>8} {f['availableReplicas']:>9} {f.get('invocationCount', 0):>11}")
    return 0

"""`faasgd train`: a job end to end through the local OpenFaaS runtime, or straight against a store.

Through the runtime (default): `faasgd up` if it is not running, POST the flags to emnist-setup,
watch the job through the gateway, print the summary, and `faasgd down` if this command started
the runtime. `--direct`: worker processes on this machine against the store, no gateway.
"""

from __future__ import annotations

import json
import os
import time

from faasgd.commands.common import gateway, raise_for_answer
from faasgd.config import FIELDS, load_config
from faasgd.display import LiveProgress, summary
from faasgd.errors import FaasgdError
from faasgd.local import control

POLL_S = 0.5  # how often the job's status is read while it runs
STORE_KEYWORDS = ("redis", "memcached")  # --store redis|memcached: the local runtime's own stores


def config_overrides(args) -> dict:
    """The config keys given as flags (strings; the config parser checks them)."""
    return {name: getattr(args, name) for name in FIELDS if getattr(args, name) is not None}


def run(args) -> int:
    overrides = config_overrides(args)
    if args.direct:
        return run_direct(args, overrides)
    keyword = overrides.get("store_url") if overrides.get("store_url") in STORE_KEYWORDS else None
    checked = {k: v for k, v in overrides.items() if not (keyword and k == "store_url")}
    config = load_config({}, checked)  # bad flags fail here, before anything starts
    if args.dry_run:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    state, started = control.up(args.file, args.port, args.dir)
    try:
        if keyword:
            overrides["store_url"] = state["stores"][keyword]["url"]
        return run_through_gateway(args, overrides)
    finally:
        if started and not args.keep_up:
            control.down(args.dir)


def run_through_gateway(args, overrides: dict) -> int:
    client = gateway(args)
    answer = raise_for_answer(client.invoke("emnist-setup", overrides), "emnist-setup")
    job_id = answer["job_id"]
    print(f"job {job_id}: {answer['number_of_workers']} worker(s), {answer['dataset']}, mode {answer['mode']}, "
          f"store {answer['store_url']}, gateway {client.url}", flush=True)
    status = watch(client, answer["status_query"], args.timeout)
    result = status["result"] or {"job_id": job_id, "state": "failed",
                                  "error": f"no result after --timeout {args.timeout:g} s"}
    print(summary(result, dict(enumerate(status["workers"]))))
    if args.json:
        print(json.dumps(result, sort_keys=True))
    return 0 if result.get("state") == "done" else 1


def watch(client, query: dict, timeout_s: float, show: bool = True) -> dict:
    """Poll the job's status (GET emnist-setup with `query`) until it is not running, or the timeout."""
    live = None
    deadline = time.monotonic() + timeout_s
    while True:
        status = raise_for_answer(client.invoke("emnist-setup", method="GET", query=query), "emnist-setup")
        if show:
            live = live or LiveProgress(status["config"]["max_epochs"])
            live(dict(enumerate(status["workers"])))
        if status["state"] != "running" or time.monotonic() > deadline:
            return status
        time.sleep(POLL_S)


def run_direct(args, overrides: dict) -> int:
    from faasgd.runner import prepare_job, run_processes

    config = load_config(os.environ, overrides)
    if args.dry_run:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    store, job_id = prepare_job(config)
    print(f"job {job_id}: {config.number_of_workers} worker(s), {config.dataset}, mode {config.mode}, "
          f"store {store.url}, target {config.target_accuracy}", flush=True)
    live = LiveProgress(config.max_epochs)
    last: dict = {}

    def on_progress(progress):
        last.update(progress)
        live(progress)

    result = run_processes(config, store, job_id, on_progress)
    print(summary(result, last))
    if args.json:
        print(json.dumps(result, sort_keys=True))
    if result.get("state") != "done" and not result.get("error"):
        raise FaasgdError(f"job {job_id} did not finish")
    return 0 if result.get("state") == "done" else 1

"""emnist-train: one worker's invocation, in loop or per-iteration mode; duplicates train nothing."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Mapping

from faasgd import job
from faasgd.config import TrainConfig, load_config
from faasgd.errors import ConfigError
from faasgd.functions import warm
from faasgd.invoke import DEFAULT_GATEWAY, Gateway
from faasgd.sgd import run_worker
from faasgd.sgd.iteration import acquire_lease, run_iteration
from faasgd.store import ParameterStore

TRAIN_FUNCTION = "emnist-train"  # the function fan-out and per-iteration chaining invoke
REQUEST_KEYS = ("job_id", "worker_id", "iteration", "store_url")


@dataclass(frozen=True)
class TrainRequest:
    job_id: str  # the job created by emnist-setup
    worker_id: int  # which shard, 0 .. number_of_workers - 1
    iteration: int  # per-iteration mode: which epoch this invocation trains (0 in loop mode)
    store_url: str  # where the job lives (defaults to the function's store_url)


def train_request(job_id: str, worker_id: int, iteration: int, store_url: str) -> dict:
    return {"job_id": job_id, "worker_id": worker_id, "iteration": iteration, "store_url": store_url}


def parse_request(body: Mapping[str, Any], env: Mapping[str, str]) -> TrainRequest:
    """Check the body names a job and a worker; unknown keys and bad values name the field."""
    if not isinstance(body, Mapping):
        raise ConfigError("body", f"must be a JSON object with job_id and worker_id, got {type(body).__name__}")
    for key in body:
        if key not in REQUEST_KEYS:
            raise ConfigError(str(key), f"unknown key (allowed: {', '.join(REQUEST_KEYS)})")
    if not isinstance(body.get("job_id"), str) or not body["job_id"]:
        raise ConfigError("job_id", f"required string, got {body.get('job_id')!r}")
    numbers = {}
    for key, default in (("worker_id", None), ("iteration", 0)):
        value = body.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(key, f"must be an integer >= 0, got {value!r}")
        numbers[key] = value
    store_url = load_config(env, {"store_url": body["store_url"]} if body.get("store_url") else {}).store_url
    return TrainRequest(body["job_id"], numbers["worker_id"], numbers["iteration"], store_url)


def gateway_for(env: Mapping[str, str]) -> Gateway:
    return Gateway(env.get("gateway_url") or DEFAULT_GATEWAY)


def training_store(config: TrainConfig, store: ParameterStore) -> ParameterStore:
    """The store a worker trains against: the global one, or node-local fetches in front of it."""
    if config.store_topology == "node-local":
        return warm.node_local_for(store, config.store_url, config.local_store_url, config.local_refresh_s)
    return store


def train(body: Mapping[str, Any], env: Mapping[str, str], call_id: str = "") -> tuple[int, dict]:
    """Run the invocation; 200 with what happened (`duplicate: true` when nothing was trained)."""
    request = parse_request(body, env)
    store = warm.store_for(request.store_url)
    config, _ = job.read_job(store, request.job_id)
    if request.worker_id >= config.number_of_workers:
        raise ConfigError("worker_id", f"must be below number_of_workers={config.number_of_workers}, "
                                       f"got {request.worker_id}")
    worker_store = training_store(config, store)
    if config.mode == "per-iteration":
        gateway = gateway_for(env)
        function = env.get("train_function") or TRAIN_FUNCTION

        def chain(iteration: int) -> None:
            gateway.invoke_async(function, train_request(request.job_id, request.worker_id, iteration,
                                                         request.store_url))

        return 200, run_iteration(config, worker_store, request.job_id, request.worker_id, request.iteration,
                                  call_id, warm.load_shard, chain)
    return 200, train_loop(config, worker_store, request, call_id)


def train_loop(config: TrainConfig, store: ParameterStore, request: TrainRequest, call_id: str) -> dict:
    """Loop mode: the whole worker in this invocation, guarded by a lease against duplicate deliveries."""
    lease = f"lease:{request.worker_id}:loop"
    answer = {"job_id": request.job_id, "worker_id": request.worker_id, "iteration": 0}
    progress = store.get_record(request.job_id, job.progress_name(request.worker_id))
    if (progress and progress.get("state") != "running") or not acquire_lease(
            store, request.job_id, lease, call_id, config.lease_s):
        return {**answer, "duplicate": True, "reason": "this worker already ran or is running"}

    def renew() -> None:
        store.put_record(request.job_id, lease, {"call_id": call_id, "at": time.time()}, ttl_s=config.lease_s)

    final = run_worker(config, store, request.job_id, request.worker_id, loader=warm.load_shard, on_progress=renew)
    return {**answer, "duplicate": False, "state": final["state"], "progress": final,
            "replica": os.environ.get("HOSTNAME", "")}

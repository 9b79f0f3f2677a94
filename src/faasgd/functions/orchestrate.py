"""The one orchestration of a job, shared by the functions and by `faasgd train --direct`.

    create_job      check the store answers and the data exists, then write the job's records
    launch_workers  one launch per worker: an async call through the gateway (emnist-setup), or a
                    local process (--direct); a launch that fails fails the job
    train_call      one invocation of a worker, in the job's mode (loop or per-iteration)
    run_single      single mode: one worker inside the caller
How a launch or a chain call reaches a worker is the caller's; what happens in the store is here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from faasgd import data, job, result
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError, FaasgdError
from faasgd.functions import replica_cache
from faasgd.sgd import run_iteration, run_loop_call, run_worker
from faasgd.store import ParameterStore

REQUEST_KEYS = ("job_id", "worker_id", "iteration", "store_url")


@dataclass(frozen=True)
class TrainRequest:
    """What one emnist-train invocation is asked to do (its JSON body)."""

    job_id: str  # the job created by emnist-setup
    worker_id: int  # which shard, 0 .. number_of_workers - 1
    iteration: int = 0  # per-iteration mode: which epoch this invocation trains (0 in loop mode)
    store_url: str | None = None  # where the job lives, when not in the function's own store

    def body(self) -> dict[str, Any]:
        out = {"job_id": self.job_id, "worker_id": self.worker_id, "iteration": self.iteration}
        return out if self.store_url is None else {**out, "store_url": self.store_url}

    def next(self, iteration: int) -> "TrainRequest":
        return replace(self, iteration=iteration)

    @classmethod
    def parse(cls, body: Any) -> "TrainRequest":
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
        store_url = body.get("store_url") or None
        if store_url is not None and not isinstance(store_url, str):
            raise ConfigError("store_url", f"must be a store URL string, got {store_url!r}")
        return cls(body["job_id"], numbers["worker_id"], numbers["iteration"], store_url)


def create_job(store: ParameterStore, config: TrainConfig) -> str:
    """Check the store answers and the data exists, then create the job; nothing is written before."""
    store.ping()
    data.load_shard(config.dataset, "test", 0, 1, limit=1)  # DataError (saying how to get it) first
    return job.create_job(store, config)


def launch_workers(store: ParameterStore, config: TrainConfig, job_id: str,
                   launch: Callable[[TrainRequest], str], store_url: str | None = None) -> list[str]:
    """Launch every worker of the job (`launch` returns a call id); the first failure fails the job."""
    call_ids: list[str] = []
    try:
        for worker_id in range(config.number_of_workers):
            call_ids.append(launch(TrainRequest(job_id, worker_id, 0, store_url)))
    except FaasgdError as error:
        result.write_result(store, job_id, error=f"fan-out stopped after {len(call_ids)} of "
                                                 f"{config.number_of_workers} workers: {error}")
        raise
    store.append_event(job_id, {"event": "fanned-out", "call_ids": call_ids})
    return call_ids


def train_call(store: ParameterStore, request: TrainRequest, call_id: str,
               chain: Callable[[TrainRequest], Any] | None = None) -> dict:
    """One invocation of a worker: the whole worker (loop) or one epoch (per-iteration, then `chain`)."""
    config, _ = job.read_job(store, request.job_id)
    if request.worker_id >= config.number_of_workers:
        raise ConfigError("worker_id", f"must be below number_of_workers={config.number_of_workers}, "
                                       f"got {request.worker_id}")
    worker_store = replica_cache.training_store(config, store)
    if config.invocation_mode == "per-iteration":
        then = None if chain is None else (lambda iteration: chain(request.next(iteration)))
        return run_iteration(config, worker_store, request.job_id, request.worker_id, request.iteration,
                             call_id, replica_cache.load_shard, then)
    return run_loop_call(config, worker_store, request.job_id, request.worker_id, call_id, replica_cache.load_shard)


def run_single(store: ParameterStore, config: TrainConfig, job_id: str) -> dict:
    """Single mode: the one worker trains here; returns the job's result record."""
    run_worker(config, replica_cache.training_store(config, store), job_id, 0, loader=replica_cache.load_shard)
    return store.get_record(job_id, "result") or result.write_result(store, job_id, error="no result written")

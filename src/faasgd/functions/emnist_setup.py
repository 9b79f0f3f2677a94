"""emnist-setup: create a job and fan out its workers through the gateway; report a job's status."""

from __future__ import annotations

import urllib.parse
from typing import Any, Mapping

from faasgd import data, job
from faasgd.config import load_config
from faasgd.errors import ConfigError, GatewayError
from faasgd.functions import warm
from faasgd.functions.train import TRAIN_FUNCTION, gateway_for, train_request, training_store
from faasgd.sgd import run_worker


def start_job(body: Mapping[str, Any], env: Mapping[str, str], callback_url: str | None = None) -> tuple[int, dict]:
    """Validate, create the job, then fan out (202) or, in single mode, train here (200).

    Nothing is written before the config, the store and the data have all checked out.
    """
    config = load_config(env, body)
    store = warm.store_for(config.store_url)
    store.ping()
    data.load_shard(config.dataset, "test", 0, 1, limit=1)  # DataError before any write
    gateway = None if config.mode == "single" else gateway_for(env)
    job_id = job.create_job(store, config)
    query = {"job_id": job_id}
    if config.store_url != load_config(env, {}).store_url:  # a job outside the function's default store
        query["store_url"] = store.url  # masked: a password-protected store must be the default one
    answer = {"job_id": job_id, "number_of_workers": config.number_of_workers, "mode": config.mode,
              "dataset": config.dataset, "store_url": store.url, "status_query": query,
              "status_url": "/function/emnist-setup?" + urllib.parse.urlencode(query)}
    if gateway is None:
        run_worker(config, training_store(config, store), job_id, 0, loader=warm.load_shard)
        return 200, {**answer, "result": store.get_record(job_id, "result")}
    function = env.get("train_function") or TRAIN_FUNCTION
    call_ids = []
    try:
        for worker_id in range(config.number_of_workers):
            request = train_request(job_id, worker_id, 0, config.store_url)
            call_ids.append(gateway.invoke_async(function, request, callback_url))
    except GatewayError as error:
        job.write_result(store, job_id, error=f"fan-out stopped after {len(call_ids)} of "
                                              f"{config.number_of_workers} workers: {error}")
        raise
    store.append_event(job_id, {"event": "fanned-out", "call_ids": call_ids})
    return 202, {**answer, "call_ids": call_ids}


def job_status(query: Mapping[str, str], env: Mapping[str, str]) -> tuple[int, dict]:
    """GET ?job_id=J: state (running | done | failed), per-worker progress and the result when finished."""
    job_id = query.get("job_id")
    if not job_id:
        raise ConfigError("job_id", "required query parameter, e.g. ?job_id=j0123456789abcde")
    unknown = sorted(set(query) - {"job_id", "store_url", "events"})
    if unknown:
        raise ConfigError(unknown[0], "unknown query parameter (allowed: job_id, store_url, events)")
    config = load_config(env, {"store_url": query["store_url"]} if query.get("store_url") else {})
    store = warm.store_for(config.store_url)
    status = job.read_status(store, job_id)
    if query.get("events") in ("1", "true"):
        status["events"] = store.events(job_id)  # created, fanned-out, one per worker epoch, result
    return 200, status

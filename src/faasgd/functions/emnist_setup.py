"""emnist-setup: create a job and fan out its workers through the gateway; report a job's status."""

from __future__ import annotations

import urllib.parse
from typing import Any, Mapping

from faasgd import job
from faasgd.config import config_from_record, load_config, read_setting
from faasgd.errors import ConfigError
from faasgd.functions import orchestrate, replica_cache, supervise
from faasgd.functions.emnist_train import relaunch_through_gateway
from faasgd.functions.settings import FunctionEnv
from faasgd.sgd import UNLIMITED, CallBudget

STATUS_QUERY_KEYS = ("job_id", "store_url", "events")


def start_job(body: Any, env: Mapping[str, str], callback_url: str | None = None,
              budget: CallBudget = UNLIMITED) -> tuple[int, dict]:
    """Validate, create the job, then fan out (202) or, in single mode, train here (200).

    Nothing is written before the config, the store and the data have all checked out.
    """
    if not isinstance(body, Mapping):  # null, [], 0, "" ... never start a default job by accident
        raise ConfigError("body", f"must be a JSON object (or a form) of config keys, got {type(body).__name__}")
    settings = FunctionEnv.read(env)
    config = load_config(env, body)  # the one parse: environment defaults, then the body
    store = replica_cache.store_for(config.store_url)
    job_id = orchestrate.create_job(store, config)
    query = {"job_id": job_id}
    if config.store_url != settings.store_url:  # a job outside the function's own store
        query["store_url"] = store.url  # masked: a password-protected store must be the function's own
    answer = {"job_id": job_id, "number_of_workers": config.number_of_workers, "invocation_mode": config.invocation_mode,
              "dataset": config.dataset, "store_url": store.url, "status_query": query,
              "status_url": "/function/emnist-setup?" + urllib.parse.urlencode(query)}
    if config.invocation_mode == "single":
        final = orchestrate.run_single(store, config, job_id, budget, relaunch_through_gateway(settings))
        return (202 if final.get("handed_off") else 200), {**answer, "result": final}
    gateway = replica_cache.gateway_for(settings.gateway_url)

    def launch(request: orchestrate.TrainRequest) -> str:
        return gateway.invoke_async(settings.train_function, request.body(), callback_url)

    store_url = None if config.store_url == settings.store_url else config.store_url
    call_ids = orchestrate.launch_workers(store, config, job_id, launch, store_url)
    return 202, {**answer, "call_ids": call_ids}


def job_status(query: Mapping[str, str], env: Mapping[str, str]) -> tuple[int, dict]:
    """GET ?job_id=J: state (running | done | failed), per-worker progress and the result when finished."""
    job_id = query.get("job_id")
    if not job_id:
        raise ConfigError("job_id", "required query parameter, e.g. ?job_id=j0123456789abcde")
    unknown = sorted(set(query) - set(STATUS_QUERY_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown query parameter (allowed: {', '.join(STATUS_QUERY_KEYS)})")
    store_url = read_setting(query, "store_url") if query.get("store_url") \
        else FunctionEnv.read(env).store_url
    store = replica_cache.store_for(store_url)
    status = job.read_status(store, job_id)
    if status["state"] == "running":  # whoever watches a job also looks after its workers
        config = config_from_record(status["config"])
        relaunch = relaunch_through_gateway(FunctionEnv.read(env))
        status["supervision"] = supervise.supervise(store, job_id, config, status, relaunch)
        if status["supervision"]:
            status = {**job.read_status(store, job_id), "supervision": status["supervision"]}
    if query.get("events") in ("1", "true"):
        status["events"] = store.events(job_id)  # created, fanned-out, one per worker epoch, result
    return 200, status

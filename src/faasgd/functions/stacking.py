"""The logic behind the four stacking functions (stacking-driver, -trainer, -reducer, -metatrainer).

Each takes the parsed JSON body and the function's environment and answers (HTTP status, JSON). The
driver's body is a StackingConfig's keys (parsed once, faasgd.stacking.config); the others' bodies are
the driver's internal calls, checked key by key (REQUEST_KEYS): a job id, a trainer id, the store's
name and the objects (base64 text inline, or the names of the job's blobs). A job's config is always
read from its record in the store, never from a call's body. Store locations and passwords come from
the function's environment and secret file only (functions/settings.py), as for emnist-*.
"""

from __future__ import annotations

from typing import Any, Mapping

from faasgd import tracing
from faasgd.checks import whole_number
from faasgd.config import read_setting
from faasgd.errors import ConfigError
from faasgd.functions import replica_cache
from faasgd.functions.settings import FunctionEnv
from faasgd.openfaas import json_answer
from faasgd.stacking import admission, flow, records
from faasgd.stacking.config import load_stacking
from faasgd.store.keys import check_job_id
from faasgd.store.url import mask_urls

DEFAULT_MAX_REQUEST_BYTES = 1 << 20  # the template's index.py default for max_request_bytes
REQUEST_KEYS = {
    flow.TRAINER: ("job_id", "trainer_id", "store", "dataset"),
    flow.REDUCER: ("job_id", "store", "trainers"),
    flow.METATRAINER: ("job_id", "store", "dataset", "models", "meta_features"),
}
STATUS_QUERY_KEYS = ("job_id", "store")


def max_request_bytes(env: Mapping[str, str]) -> int:
    text = str(env.get("max_request_bytes") or DEFAULT_MAX_REQUEST_BYTES).strip()
    if not text.isdigit() or int(text) < 1:
        raise ConfigError("max_request_bytes", f"must be an integer >= 1 (the function's environment), got {text!r}")
    return int(text)


@tracing.traced("stacking.driver")
def drive(body: Any, env: Mapping[str, str]) -> tuple[int, dict]:
    """stacking-driver's POST: check everything (the body, inline sizes, memory: stacking/admission.py), create the
    job, run its four phases; 200 with the result."""
    settings = FunctionEnv.read(env)
    config = load_stacking(env, body)
    flow.check_inline(config, max_request_bytes(env))
    admission.check(config, env)  # a 413 naming n_samples or n_features before anything is created
    store = replica_cache.store_for(settings.store_url_of(config.store))
    store.ping()
    job_id = records.create_job(store, config)
    tracing.annotate(job_id=job_id, trainers=config.trainers_num)
    gateway = replica_cache.gateway_for(settings.gateway_url)

    def call(function: str, payload: dict) -> dict:
        answer = gateway.invoke(function, payload, timeout_s=config.call_timeout_s)
        return json_answer(answer, function)

    result = flow.drive(tracing.traced_store(store), job_id, config, tracing.carry(call))  # carry: the trainers' pool
    return 200, {"job_id": job_id, "store": config.store or "default", **result}


def status(query: Mapping[str, str], env: Mapping[str, str]) -> tuple[int, dict]:
    """stacking-driver's GET ?job_id=J[&store=NAME]: the job's state, phase and (when done) its result."""
    unknown = sorted(set(query) - set(STATUS_QUERY_KEYS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown query parameter (allowed: {', '.join(STATUS_QUERY_KEYS)})")
    job_id = check_job_id(query.get("job_id") or "")
    store_name = read_setting({"store": query.get("store") or ""}, "store")
    store = replica_cache.store_for(FunctionEnv.read(env).store_url_of(store_name))
    return 200, records.read_status(store, job_id)


@tracing.traced(lambda function, *_: f"stacking.{function.removeprefix('stacking-')}")
def work(function: str, body: Any, env: Mapping[str, str]) -> tuple[int, dict]:
    """A trainer's, the reducer's or the metatrainer's call from the driver."""
    if not isinstance(body, Mapping):
        raise ConfigError("body", f"must be a JSON object, got {type(body).__name__}")
    for key in body:
        if key not in REQUEST_KEYS[function]:
            raise ConfigError(str(key), f"unknown key (allowed: {', '.join(REQUEST_KEYS[function])})")
    job_id = check_job_id(body.get("job_id"))
    store_name = body.get("store") or ""
    if not isinstance(store_name, str):
        raise ConfigError("store", f"must be the name of a configured store, got {mask_urls(repr(store_name))}")
    store = replica_cache.store_for(FunctionEnv.read(env).store_url_of(read_setting({"store": store_name}, "store")))
    config = records.read_config(store, job_id)
    tracing.annotate(job_id=job_id, trainer_id=body.get("trainer_id"))
    store = tracing.traced_store(store)
    if function == flow.TRAINER:
        trainer_id = body.get("trainer_id")
        whole_number(trainer_id, "trainer_id", low=0, high=config.trainers_num - 1,
                     must=f"an integer in [0, {config.trainers_num})")
        return 200, flow.train(store, job_id, config, trainer_id, body.get("dataset"))
    if function == flow.REDUCER:
        trainers = body.get("trainers")
        if not isinstance(trainers, list) or len(trainers) != config.trainers_num \
                or not all(isinstance(t, Mapping) for t in trainers):
            raise ConfigError("trainers", f"must be a list of {config.trainers_num} objects {{model, predictions}}")
        return 200, flow.reduce(store, job_id, config, trainers)
    return 200, flow.metatrain(store, job_id, config, body)

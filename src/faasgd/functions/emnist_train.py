"""emnist-train: one worker's invocation, in loop or per-iteration mode; duplicates train nothing."""

from __future__ import annotations

from typing import Any, Mapping

from faasgd.functions import orchestrate, replica_cache
from faasgd.functions.settings import FunctionEnv


def train(body: Any, env: Mapping[str, str], call_id: str = "") -> tuple[int, dict]:
    """Run the invocation; 200 with what happened (`duplicate: true` when nothing was trained)."""
    request = orchestrate.TrainRequest.parse(body)
    settings = FunctionEnv.read(env)
    store = replica_cache.store_for(request.store_url or settings.store_url)
    gateway = replica_cache.gateway_for(settings.gateway_url)

    def chain(next_request: orchestrate.TrainRequest) -> str:  # per-iteration: invoke the next epoch
        return gateway.invoke_async(settings.train_function, next_request.body())

    return 200, orchestrate.train_call(store, request, call_id, chain)

"""emnist-train: one worker's invocation, in loop or per-iteration mode; duplicates train nothing."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from faasgd import tracing
from faasgd.errors import GatewayError
from faasgd.functions import orchestrate, replica_cache, supervise
from faasgd.functions.call_limits import call_clock
from faasgd.functions.settings import FunctionEnv
from faasgd.functions.train_request import TrainRequest
from faasgd.profile import exporter
from faasgd.retry import GATEWAY_CALL, retry_call
from faasgd.worker.budget import UNLIMITED, CallBudget

log = logging.getLogger("faasgd.functions")


def train(body: Any, env: Mapping[str, str], call_id: str = "", budget: CallBudget = UNLIMITED,
          slow: str | None = None) -> tuple[int, dict]:
    """Run the invocation; 200 with what happened (`duplicate: true` when nothing was trained,
    `handed_off: true` when the call stopped early and re-invoked the same work). `slow`: the call's X-Chaos-Slow
    header (faasgd.worker.straggler.from_header), if any."""
    clock = call_clock(env)  # the call's billed time starts at its entry
    request = TrainRequest.parse(body)
    settings = FunctionEnv.read(env)
    store = replica_cache.store_for(settings.store_url_of(request.store))
    with tracing.span("train", tracing.SpanKind.SERVER, job_id=request.job_id, worker_id=request.worker_id, iteration=request.iteration,
                      call_id=call_id):  # continues the caller's trace (index.py attached its traceparent)
        return 200, orchestrate.train_call(store, request, call_id, relaunch_through_gateway(settings), budget,
                                           settings.local_store_url, clock, slow)


def metrics() -> dict:
    """GET /metrics: the training metrics of this replica's workers (a Prometheus scrape, or the local gateway's)."""
    return {"statusCode": 200, "body": exporter.render(), "headers": {"Content-Type": exporter.CONTENT_TYPE}}


def relaunch_through_gateway(settings: FunctionEnv, quiet: bool = True, report: bool = False) -> orchestrate.Relaunch:
    """Invoke emnist-train asynchronously for a worker (retried; past that, supervision takes over). `quiet`:
    a call the gateway would not take is logged and gives None; otherwise its GatewayError is raised.
    `report`: the queue reports the call's end to supervision (supervise.report_url)."""
    gateway = replica_cache.gateway_for(settings.gateway_url)

    def relaunch(request: TrainRequest) -> str | None:
        callback = supervise.report_url(settings.gateway_url, request) if report else None
        try:
            return retry_call(lambda: gateway.invoke_async(settings.train_function, request.body(), callback),
                              GATEWAY_CALL, (GatewayError,))
        except GatewayError as error:
            if not quiet:
                raise
            log.error("job %s worker %d: could not invoke %s (%s); supervision will re-invoke it", request.job_id,
                      request.worker_id, settings.train_function, error)
            return None

    return relaunch

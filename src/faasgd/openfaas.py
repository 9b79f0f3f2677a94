"""The OpenFaaS gateway client (on httpx) and the one loop that waits for a job to end.

Used by emnist-setup (fan-out) and emnist-train (per-iteration chaining) inside the cluster, and by
the CLI, test.sh and the benches from outside. Async calls POST `/async-function/<name>`; the
gateway answers 202 with `X-Call-Id` and its queue-worker delivers at least once. Pass ids in
payloads, never weights (NATS caps a message at 1 MB).
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

# httpx imports its command-line client (httpx._main: click, rich, pygments; ~0.05 s of CPU) inside `try: ...
# except ImportError`; no faasgd process runs it, and None in sys.modules makes that import fail at once. Here, so
# every process that reaches httpx through the core skips it: `train --direct`'s forkserver and workers too, as
# the `faasgd` command and the runtime's daemon and replicas already did.
sys.modules.setdefault("httpx._main", None)
import httpx  # noqa: E402

from faasgd import tracing
from faasgd.errors import FaasgdError, GatewayError
from faasgd.polling import POLL_S, poll_until  # wait_for_job's; callers of the gateway take them from here too

DEFAULT_GATEWAY_URL = "http://gateway.openfaas:8080"  # the gateway's Service, as functions reach it in a cluster
SETUP_FUNCTION = "emnist-setup"  # creates jobs, fans out, answers their status
TRAIN_FUNCTION = "emnist-train"  # one worker's invocation
# Added by the local runtime's `--chaos slow:FUNCTION:FACTOR[:WORKER]` to each delivery of FUNCTION, as FACTOR or
# FACTOR:WORKER: the worker(s) it names sleep (FACTOR - 1) x each step's time after it (faasgd.worker.straggler)
CHAOS_SLOW_HEADER = "X-Chaos-Slow"

# The environment names of-watchdog 0.11.3 reads (openfaas/of-watchdog config/config.go and
# pkg/watchdog.go at 01c65eda, the version the template pins). stack.yml `environment` becomes the
# container's environment, which the watchdog and the function process share: no setting of ours may
# use one of these names (OPENFAAS.md 1.8), nor one the template's Dockerfile sets with ENV.
WATCHDOG_ENV = (
    "mode", "fprocess", "function_process", "upstream_url", "http_upstream_url", "port", "read_timeout",
    "write_timeout", "exec_timeout", "healthcheck_interval", "max_inflight", "prefix_logs", "log_buffer_size",
    "log_callid", "content_type", "static_path", "suppress_lock", "buffer_http", "http_buffer_req_body",
    "ready_path", "jwt_auth", "jwt_auth_debug", "jwt_auth_local", "OPENFAAS_NAME", "OPENFAAS_NAMESPACE",
)
# Of those, the ones a stack sets on purpose, for the watchdog itself (its timeouts, readiness, logs).
WATCHDOG_TUNING = ("read_timeout", "write_timeout", "exec_timeout", "healthcheck_interval", "ready_path",
                   "suppress_lock", "max_inflight", "prefix_logs", "log_buffer_size", "log_callid")


# of-watchdog's durations (exec_timeout, write_timeout, healthcheck_interval, X-Timeout): an integer (seconds) or
# a Go duration. Parsed here, not by a library: of those on PyPI, pytimeparse reads no ms, us or ns, pytimeparse2
# reads no us or ns and also takes forms Go refuses ("1 day", "1:30"), and goduration is a first, planning-stage
# release. Read by the functions (their call limits) and by the local runtime (a replica's stop grace).
WATCHDOG_DEFAULT_TIMEOUT_S = 30.0  # the watchdog's own default for exec_timeout and write_timeout
GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
GO_DURATION = re.compile(r"(?:(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+")
GO_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_seconds(value: Any, default: float | None = WATCHDOG_DEFAULT_TIMEOUT_S) -> float | None:
    """A watchdog duration in seconds: an integer ("30") or a Go duration ("1m5s", "1.5h", "500ms");
    `default` for nothing or anything else, as the watchdog falls back to its default."""
    text = "" if value is None else str(value).strip()
    if text.isdigit():
        return float(text)
    if not GO_DURATION.fullmatch(text):
        return default
    return sum(float(number) * GO_UNITS[unit] for number, unit in GO_TERM.findall(text))


@dataclass(frozen=True)
class Response:
    status: int
    headers: httpx.Headers  # case-insensitive, as HTTP header names are
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


class FunctionError(FaasgdError):
    """Raised when a function answers an error status; carries that status and the function's message."""

    def __init__(self, status: int, message: str, field: str | None = None):
        self.http_status, self.field = status, field
        super().__init__(message)


class GatewayClient:
    """Calls functions through one gateway URL; every call has a timeout.

    `auth` (user, password) is sent as HTTP basic auth on /system/* only, where OpenFaaS's gateway
    asks for it; calls of functions never carry it (the gateway would pass it on to the function).
    """

    def __init__(self, url: str = DEFAULT_GATEWAY_URL, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None, auth: tuple[str, str] | None = None):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._http = httpx.Client(timeout=timeout_s, transport=transport)
        self._auth = httpx.BasicAuth(*auth) if auth else None

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                query: dict | None = None, timeout_s: float | None = None) -> Response:
        """One HTTP request to the gateway; any status is returned, only transport failures raise."""
        auth = self._auth if path.startswith("/system/") else None
        try:
            answer = self._http.request(method, self.url + path, content=body, headers=headers, params=query,
                                        timeout=timeout_s or self.timeout_s, auth=auth)
        except httpx.HTTPError as error:
            raise GatewayError(self.url, f"{type(error).__name__}: {error}") from None
        return Response(answer.status_code, answer.headers, answer.content)

    def invoke(self, function: str, payload: Any = None, method: str = "POST", headers: dict | None = None,
               query: dict | None = None, timeout_s: float | None = None) -> Response:
        """Synchronous call of /function/<name>; a payload that is not bytes is sent as JSON."""
        body, headers = encode(payload, headers)
        with tracing.call_span(function, asynchronous=False):  # the callee's spans continue this one's trace
            return self.request(method, f"/function/{function}", body, tracing.inject(headers), query, timeout_s)

    def invoke_async(self, function: str, payload: Any = None, callback_url: str | None = None,
                     headers: dict | None = None) -> str:
        """Queue a call of /async-function/<name>; returns its X-Call-Id. Anything but 202 raises."""
        body, headers = encode(payload, headers)
        if callback_url:
            headers["X-Callback-Url"] = callback_url
        with tracing.call_span(function, asynchronous=True):  # its traceparent travels in the queued call
            answer = self.request("POST", f"/async-function/{function}", body, tracing.inject(headers))
            if answer.status != 202:
                detail = answer.body[:200].decode("utf-8", "replace").strip()
                raise GatewayError(self.url, f"async {function}: HTTP {answer.status} {detail}".strip())
            tracing.annotate(call_id=answer.headers.get("X-Call-Id", ""))
            return answer.headers.get("X-Call-Id", "")

    def function_status(self, function: str) -> dict:
        """GET /system/function/<name>: replicas, availableReplicas, ..."""
        return json_answer(self.request("GET", f"/system/function/{function}"), function)

    def scale(self, function: str, replicas: int) -> None:
        """POST /system/scale-function/<name> (on a cluster, kubectl scale is the way). CE answers 202 with an
        empty body; any 2xx is taken, an error answer raises as json_answer does."""
        answer = self.request("POST", f"/system/scale-function/{function}",
                              json.dumps({"serviceName": function, "replicas": replicas}).encode(),
                              {"Content-Type": "application/json"})
        if not 200 <= answer.status < 300:
            json_answer(answer, f"scale {function}")

    def wait_for_replicas(self, function: str, replicas: int, timeout_s: float, **clock) -> dict:
        """Until the gateway reports `replicas` of `function`, all available; FaasgdError at the deadline."""
        status = poll_until(lambda: self.function_status(function),
                            lambda f: f["availableReplicas"] == f["replicas"] == replicas, timeout_s, **clock)
        if not status["availableReplicas"] == status["replicas"] == replicas:
            raise FaasgdError(f"{function}: {status['availableReplicas']} of {replicas} replica(s) available "
                              f"after {timeout_s:g} s")
        return status

    def job_status(self, query: dict, timeout_s: float | None = None) -> dict:
        """GET emnist-setup's status of a job (`query` holds its job_id)."""
        return json_answer(self.invoke(SETUP_FUNCTION, method="GET", query=query, timeout_s=timeout_s),
                           SETUP_FUNCTION)

    def cancel_job(self, query: dict) -> dict:
        """POST emnist-setup's cancel of a job (`query` holds its job_id; cancel=1 is added): its status."""
        return json_answer(self.invoke(SETUP_FUNCTION, b"", query={**query, "cancel": "1"}), SETUP_FUNCTION)

    def restore_job(self, query: dict, model_npz: bytes) -> dict:
        """POST emnist-setup's restore of a job from its model file (`query` holds its job_id; restore=1 is added):
        {"job_id", "restored"}."""
        headers = {"Content-Type": "application/octet-stream"}
        return json_answer(self.invoke(SETUP_FUNCTION, model_npz, headers=headers, query={**query, "restore": "1"}),
                           SETUP_FUNCTION)

    def model_file(self, query: dict, timeout_s: float | None = None) -> bytes:
        """GET emnist-setup's model file of a job (`query` holds its job_id; model=npz is added): npz bytes."""
        answer = self.invoke(SETUP_FUNCTION, method="GET", query={**query, "model": "npz"}, timeout_s=timeout_s)
        if answer.status == 200 and answer.headers.get("Content-Type", "").startswith("application/octet-stream"):
            return answer.body
        json_answer(answer, SETUP_FUNCTION)  # raises the function's own error
        raise FunctionError(answer.status, f"{SETUP_FUNCTION}: expected an npz file, got "
                                           f"{answer.headers.get('Content-Type') or 'no content type'}")

    def close(self) -> None:
        self._http.close()


def encode(payload: Any, headers: dict | None) -> tuple[bytes | None, dict]:
    """(body, headers): bytes and None pass as they are; anything else becomes JSON."""
    headers = dict(headers or {})
    if payload is None or isinstance(payload, bytes):
        return payload, headers
    headers.setdefault("Content-Type", "application/json")
    return json.dumps(payload).encode(), headers


def json_answer(answer: Response, what: str) -> Any:
    """The JSON body of a 2xx answer; a FunctionError with the function's own message otherwise."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if 200 <= answer.status < 300 and body is not None:
        return body
    if isinstance(body, dict) and body.get("error"):
        raise FunctionError(answer.status, body["error"], body.get("field"))
    text = answer.body[:300].decode("utf-8", "replace").strip()
    raise FunctionError(answer.status, f"{what}: HTTP {answer.status}" + (f": {text}" if text else ""))


def wait_for_job(read_status: Callable[[], dict], timeout_s: float, *, poll_s: float = POLL_S,
                 on_status: Callable[[dict], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, read_waits: bool = False) -> dict:
    """Read a job's status until it is no longer running or `timeout_s` has passed; the last status.

    `read_status` is where the status comes from (the gateway, or the store directly); `on_status`
    sees every status read (live progress). A status still "running" at the deadline is returned
    as it is: the caller decides what a timeout means.
    """
    return poll_until(read_status, lambda status: status.get("state") != "running", timeout_s, poll_s=poll_s,
                      on_value=on_status, sleep=sleep, clock=clock, read_waits=read_waits)

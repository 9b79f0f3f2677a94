"""The local runtime's gateway as a Starlette app: OpenFaaS's routes, status codes and headers.

Routes follow openfaas/faas `gateway/main.go`: /function/NAME[/path] (GET, HEAD, POST, PUT, PATCH,
DELETE, OPTIONS), POST /async-function/NAME[/path], GET /healthz, GET /metrics (the gateway's, then those of
the replicas of functions annotated prometheus.io.scrape: scrape.py), and under /system
(behind basic auth when a login is set, auth.py) the functions, scale, info and namespaces
(system.py), secrets (system_secrets.py) and logs (system_logs.py). Replicas come from a Registry
(the runtime's Supervisor). Where this departs from OpenFaaS CE, and why (forwarding: see proxy.py;
the queue-worker: see queue.py; /system: see its modules):
* Errors are JSON {"error": ...} throughout. A method a route does not serve answers 405 JSON with
  Allow, as gorilla/mux does; on /function that includes TRACE, CONNECT and unknown methods, which
  CE would forward (a function has no use for them, and TRACE echoes credentials). Unknown paths
  answer 404 JSON. Requests h11 cannot parse get a JSON 400 too, from the server (server.JsonErrorsH11).
* Unknown functions: 404 JSON on every route, /async-function included (CE accepts those with a
  202 and the call is lost, faas#1298). 404s are not counted in /metrics (unbounded label values).
* Async bodies over `max_async_body_bytes` (1 MiB, the NATS message limit) answer 413; current CE
  refuses more than 256 000 bytes with a 500 (nats-queue-worker `handler/nats_queue.go`). Sync
  bodies over `max_sync_body_bytes` answer 413 too (CE sets no limit).
* A call the queue cannot take answers 503 with Retry-After (down, reconnecting, out of room; CE: 500),
  within the broker's publish deadline, and /healthz answers 503 naming the queue while it cannot; a
  client resending with the X-Call-Id of the 503 is stored once (queue_jetstream.py).
* Limits on every request (limits.py): a URL past 8 KiB is a 414, more than 100 header fields or 16 KiB of them
  a 431, a Content-Length over the route's body limit a 413 at once (nothing read), a body that stops coming a
  408 after `body_idle_timeout_s`; CE's Go server allows 1 MB of headers and waits for a body its own timeouts.
* A request with both Content-Length and Transfer-Encoding is a 400 (CE's Go server takes the latter);
  an X-Callback-Url must be a printable http(s) URL of at most 2048 characters (CE takes any URL).
* X-Call-Id is echoed on every /function and /async-function response (CE only when it made one);
  X-Duration-Seconds (which of-watchdog adds in CE) is added by the gateway, measured to the
  response headers since the body streams after them.
* Header names are written as Go writes them (X-Call-Id), to clients and to replicas alike.
* Metric labels and the queue's X-Function-Name carry the bare function name; "NAME.openfaas-fn"
  is accepted in paths and stripped (there is one namespace).
"""

from __future__ import annotations

import time
import uuid
from contextlib import asynccontextmanager
from urllib.parse import unquote

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from faasgd.local.clock import Clock, RealClock
from faasgd.local.gateway import scrape
from faasgd.local.gateway.auth import RequireBasicAuth
from faasgd.local.gateway.directory import Directory
from faasgd.local.gateway.limits import HeadLimits
from faasgd.local.gateway.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from faasgd.local.gateway.metrics import Metrics
from faasgd.local.gateway.options import GatewayOptions, Registry
from faasgd.local.gateway.proxy import HOP_BY_HOP, LIMITS, Proxy, canonical, connection_tokens
from faasgd.local.gateway.responses import (AnswerWhenCutOff, BodyRefused, OneBodyFraming, ProxiedResponse, SERVER,
                                            WireHeaders, body_refused, client_gone, error, http_error, read_body,
                                            server_error, too_large)
from faasgd.local.gateway.system import FunctionsApi
from faasgd.local.gateway.system_logs import LogsApi
from faasgd.local.gateway.system_secrets import SecretsApi
from faasgd.local.queue.errors import QueueError
from faasgd.local.queue.messages import AsyncCall, Broker, Reply
from faasgd.local.queue.workers import CallQueue, QueueWorkers, USER_AGENT

INVOKE_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
RETRY_AFTER_S = 5  # what a 503 from the queue asks the client to wait (the broker's watch restarts it within ~2 s)
MAX_CALLBACK_URL = 2048  # characters; as the functions' own check (faasgd.functions.emnist_setup.check_callback)
_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length", "expect"}


def create_app(registry: Registry, options: GatewayOptions = GatewayOptions(),
               transport: httpx.AsyncBaseTransport | None = None, clock: Clock | None = None, *,
               broker: Broker) -> Starlette:
    """The gateway over `registry`; replicas and callbacks are reached through `transport` (default: TCP),
    async calls are kept by `broker` (queue/jetstream.py in the runtime).

    `app.state.queue` is its CallQueue, `app.state.metrics` its Metrics. The queue-workers run
    between the app's lifespan startup and shutdown.
    """
    clock = clock or RealClock()
    # trust_env=False: an HTTP(S)_PROXY in the environment must not capture calls to loopback replicas.
    client = httpx.AsyncClient(transport=transport or httpx.AsyncHTTPTransport(limits=LIMITS), trust_env=False)
    metrics, directory = Metrics(), Directory(registry, options.replica_wait_s, clock)
    proxy = Proxy(client, metrics, clock, options.upstream_timeout_s)
    gateway = Gateway(options, directory, proxy, metrics)
    queue = QueueWorkers(broker, gateway.deliver, gateway.queue_workers_wanted, client, options.delivery,
                         options.ack_wait_s, clock)
    gateway.queue = queue

    @asynccontextmanager
    async def lifespan(app: Starlette):
        await queue.start()
        try:
            yield
        finally:
            await queue.stop()
            await client.aclose()

    system = [FunctionsApi(options, directory, metrics), SecretsApi(options.secrets_dir),
              LogsApi(options, directory, clock)]
    app = Starlette(routes=gateway.routes() + [route for api in system for route in api.routes()],
                    middleware=[Middleware(WireHeaders), Middleware(HeadLimits), Middleware(AnswerWhenCutOff),
                                Middleware(OneBodyFraming),
                                Middleware(RequireBasicAuth, login=options.basic_auth)],
                    lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, ClientDisconnect: client_gone,
                                        BodyRefused: body_refused, Exception: server_error})
    app.router.redirect_slashes = False  # "/healthz/" is a 404, not a redirect
    app.state.queue, app.state.metrics, app.state.balancer = queue, metrics, proxy.balancer
    app.state.body_idle_timeout_s = options.body_idle_timeout_s  # read_body's (responses.py)
    return app


class Gateway:
    """The routes' handlers, and the queue-worker's way into the proxy."""

    def __init__(self, options: GatewayOptions, directory: Directory, proxy: Proxy, metrics: Metrics):
        self.options, self.directory, self.proxy, self.metrics = options, directory, proxy, metrics
        self.queue: CallQueue | None = None  # set by create_app (the queue delivers through this gateway)

    def routes(self) -> list[Route]:
        return [Route("/function/{name}", self.invoke, methods=INVOKE_METHODS),
                Route("/function/{name}/{rest:path}", self.invoke, methods=INVOKE_METHODS),
                Route("/async-function/{name}", self.enqueue, methods=["POST"]),
                Route("/async-function/{name}/{rest:path}", self.enqueue, methods=["POST"]),
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/metrics", self.render_metrics, methods=["GET"])]

    # -- /function and /async-function -------------------------------------------------------------
    async def invoke(self, request: Request) -> Response:
        call_id, start_ns = request.headers.get("x-call-id") or str(uuid.uuid4()), time.time_ns()
        name, rest = _split_path(request)
        body = await read_body(request, self.options.max_sync_body_bytes)
        function, urls = await self.directory.route(name, self.proxy.balancer.in_flight)
        if body is None:
            response = too_large(self.options.max_sync_body_bytes, "a synchronous call")
        elif function is None:
            response = error(404, f"function not found: {name}")
        else:
            headers = _upstream_headers(request, {"X-Call-Id": call_id, "X-Start-Time": str(start_ns)})
            forwarded = await self.proxy.open(function, urls, request.method, rest, _query(request), headers, body)
            response = ProxiedResponse(forwarded)
        _stamp(response, call_id, start_ns, self.options.version)
        response.headers["X-Duration-Seconds"] = f"{(time.time_ns() - start_ns) / 1e9:.6f}"
        return response

    async def enqueue(self, request: Request) -> Response:
        call_id, start_ns = request.headers.get("x-call-id") or str(uuid.uuid4()), time.time_ns()
        name, rest = _split_path(request)
        body = await read_body(request, self.options.max_async_body_bytes)
        function, callback = await self.directory.resolve(name), request.headers.get("x-callback-url")
        if function is None:
            response = error(404, f"function not found: {name}")
        elif callback is not None and not _is_http_url(callback):
            response = error(400, f"X-Callback-Url: must be an http or https URL with a host, at most "
                                  f"{MAX_CALLBACK_URL} printable characters without spaces, got {callback[:200]!r}")
        elif body is None:
            response = too_large(self.options.max_async_body_bytes, "an async call (the NATS message limit)")
        else:
            headers = _upstream_headers(request, {"X-Call-Id": call_id, "X-Start-Time": str(start_ns)})
            try:
                await self.queue.put(AsyncCall(function, request.method, rest, _query(request), headers, body,
                                               call_id, callback))
                response = Response(status_code=202)
            except QueueError as exc:  # CE answers 500; here 503 + Retry-After (try again) or 413, never silence
                response = error(exc.http_status, f"queue: {exc}")
                if exc.http_status == 503:
                    response.headers["Retry-After"] = str(RETRY_AFTER_S)
        _stamp(response, call_id, start_ns, self.options.version)
        return response

    async def deliver(self, call: AsyncCall) -> Reply:
        """One delivery of an async call, as CE's queue-worker makes it through the gateway."""
        urls = await self.directory.replica_urls(call.name, self.proxy.balancer.in_flight)
        headers = _replaced(call.headers, {"User-Agent": USER_AGENT, "X-Start-Time": str(time.time_ns())})
        return await self.proxy.call(call.name, urls, call.method, call.path, call.query, headers, call.body)

    async def queue_workers_wanted(self) -> int:
        return self.options.queue_workers or await self.directory.call_slots()

    # -- /metrics, /healthz ---------------------------------------------------------------------------
    async def healthz(self, request: Request) -> Response:
        """200 OK, or 503 naming the queue while its broker cannot take calls (down, reconnecting, stuck)."""
        problem = await self.queue.problem()
        return error(503, f"queue: {problem}") if problem else PlainTextResponse("OK")

    async def render_metrics(self, request: Request) -> Response:
        text = self.metrics.render(await self.directory.available_replicas())
        targets = await scrape.scrape_targets(await self.directory.statuses(), self.directory.replica_urls)
        if targets:  # the annotated functions' own metrics (scrape.py), as a cluster's Prometheus would scrape
            text += (await scrape.scrape(self.proxy.client, targets)).encode()
        return Response(text, media_type=METRICS_CONTENT_TYPE)



# -- requests ------------------------------------------------------------------------------------------
def _split_path(request: Request) -> tuple[str, str]:
    """NAME (percent-decoded) and the raw path suffix ("" or "/...") of /function/NAME[/...]."""
    raw = (request.scope.get("raw_path") or request.scope["path"].encode()).split(b"?")[0].decode("latin-1")
    parts = raw.split("/", 3)  # "", "function", NAME, suffix
    return unquote(parts[2]), ("/" + parts[3] if len(parts) > 3 else "")


def _query(request: Request) -> str:
    return request.scope.get("query_string", b"").decode("latin-1")


def _upstream_headers(request: Request, stamps: dict[str, str]) -> list[tuple[str, str]]:
    """The client's headers minus hop-by-hop ones, plus the gateway's stamps and X-Forwarded-*."""
    dropped = _NOT_FORWARDED | connection_tokens(request.headers.get("connection"))
    headers = [(canonical(k.decode("latin-1")), v.decode("latin-1")) for k, v in request.headers.raw]
    headers = [(k, v) for k, v in headers if k.lower() not in dropped]
    extra = {"X-Forwarded-Host": request.headers.get("host"),
             "X-Forwarded-For": request.client.host if request.client else None}
    headers += [(k, v) for k, v in extra.items() if v and k not in request.headers]
    return _replaced(headers, stamps)


def _replaced(headers: list[tuple[str, str]], values: dict[str, str]) -> list[tuple[str, str]]:
    lowered = {k.lower() for k in values}
    return [(k, v) for k, v in headers if k.lower() not in lowered] + list(values.items())


def _stamp(response: Response, call_id: str, start_ns: int, version: str) -> None:
    response.headers["X-Call-Id"] = call_id
    response.headers["X-Start-Time"] = str(start_ns)
    response.headers["X-Served-By"] = f"{SERVER}/{version}"


def _is_http_url(value: str) -> bool:
    if len(value) > MAX_CALLBACK_URL or not value.isprintable() or any(c.isspace() for c in value):
        return False
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, TypeError):
        return False
    return url.scheme in ("http", "https") and bool(url.host)


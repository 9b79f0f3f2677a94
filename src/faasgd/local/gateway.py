"""The local runtime's HTTP gateway: OpenFaaS's routes, status codes and headers, standard library only.

Routes follow openfaas/faas `gateway/main.go`: /function/NAME[/path] (any method), POST
/async-function/NAME[/path], GET /system/functions, GET /system/function/NAME, POST
/system/scale-function/NAME, GET /system/info, GET /healthz, GET /metrics. Replicas come from a
Registry (the runtime's Supervisor). Where this departs from OpenFaaS CE, and why:
* Load balancing: each call goes to the healthy replica with the fewest calls in flight, ties taken
  round-robin, so a long training call never queues behind another (Kubernetes Services pick at
  random). No failover: a replica that refuses the connection gives 502, as in CE.
* Upstream timeout answers 504 JSON (CE's gateway answers 502 when its own upstream_timeout
  fires; of-watchdog's exec_timeout gives 504). No healthy replica or a refused/reset connection
  answers 502 JSON (CE's provider says 503 / 500). Errors are JSON {"error": ...} throughout.
* Unknown functions: 404 JSON on every route, /async-function included (CE accepts those with a
  202 and the call is lost, faas#1298). 404s are not counted in /metrics (unbounded label values).
* Async bodies over `max_async_body_bytes` (1 MiB, the NATS message limit) answer 413; current CE
  refuses more than 256 000 bytes with a 500 (nats-queue-worker `handler/nats_queue.go`).
* Scaling is validated by the registry (a bad count is a 400 naming the field) where CE clamps to
  [1, 5]. A path whose method is not served answers 405 with Allow, as gorilla/mux does.
* X-Call-Id is echoed on every /function and /async-function response (CE only when it made one);
  X-Duration-Seconds (which of-watchdog adds in CE) is added by the gateway.
* Metric labels and the queue's X-Function-Name carry the bare function name; "NAME.openfaas-fn"
  is accepted in paths and stripped (there is one namespace).
Retries and redelivery of async calls are described in faasgd.local.queue.
"""

from __future__ import annotations

import http.client
import json
import logging
import platform
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol
from urllib.parse import urlsplit

from faasgd.errors import ConfigError
from faasgd.local.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from faasgd.local.metrics import Metrics
from faasgd.local.queue import USER_AGENT as QUEUE_USER_AGENT
from faasgd.local.queue import AsyncCall, CallQueue, QueueOptions, Reply

log = logging.getLogger(__name__)

NAMESPACE = "openfaas-fn"  # the only namespace; "NAME.openfaas-fn" in a path means NAME
NAME = r"(?P<name>[-a-zA-Z_0-9.]+)"  # the gateway's NameExpression
HOP_BY_HOP = {"connection", "proxy-connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
              "te", "trailer", "transfer-encoding", "upgrade"}
_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length", "expect"}
_STAMPS = {"x-call-id", "x-start-time", "x-served-by", "x-duration-seconds"}
_NO_BODY_STATUSES = {204, 304}
SCALE_FIELDS = ("serviceName", "replicas", "namespace")


@dataclass(frozen=True)
class GatewayOptions:
    host: str = "127.0.0.1"  # loopback only
    port: int = 8080  # 0 lets the OS pick (then read LocalGateway.url after start)
    upstream_timeout_s: float = 300.0  # a synchronous call taking longer -> 504
    ack_wait_s: float = 300.0  # an async delivery not finished after this is delivered again
    queue_workers: int | None = None  # None: one per replica (registry.total_replicas(), re-read every 0.5 s)
    max_attempts: int = 5  # deliveries per async call at most; 502/503/504 are retried with backoff
    version: str = "0.1.0"  # in X-Served-By and /system/info
    max_async_body_bytes: int = 1 << 20  # NATS message limit; larger async bodies -> 413

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError("port", f"must be in [0, 65535], got {self.port!r}")
        for name in ("upstream_timeout_s", "ack_wait_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(name, f"must be > 0 seconds, got {getattr(self, name)!r}")
        if self.queue_workers is not None and self.queue_workers < 1:
            raise ConfigError("queue_workers", f"must be None (one per replica) or >= 1, got {self.queue_workers!r}")
        if self.max_attempts < 1:
            raise ConfigError("max_attempts", f"must be >= 1, got {self.max_attempts!r}")


class Registry(Protocol):
    """What the gateway needs of the replica supervisor (faasgd.local.replicas.Supervisor)."""

    def function_names(self) -> list[str]: ...
    def describe(self, name: str) -> dict | None: ...
    def replica_urls(self, name: str) -> list[str]: ...
    def scale(self, name: str, replicas: int) -> int: ...
    def total_replicas(self) -> int: ...


@dataclass
class Request:
    method: str
    path: str  # raw (still percent-encoded), without the query
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    client: str  # client IP, for X-Forwarded-For

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


class Balancer:
    """Least calls in flight per replica URL; ties go round-robin, per function."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: Counter[str] = Counter()
        self._turn: Counter[str] = Counter()

    def acquire(self, function: str, urls: list[str]) -> str:
        with self._lock:
            turn = self._turn[function] % len(urls)
            self._turn[function] += 1
            url = min(urls[turn:] + urls[:turn], key=lambda u: self._in_flight[u])  # first of the least busy
            self._in_flight[url] += 1
            return url

    def release(self, url: str) -> None:
        with self._lock:
            self._in_flight[url] -= 1
            if self._in_flight[url] <= 0:
                del self._in_flight[url]


class LocalGateway:
    """The gateway and its queue-workers; `start()` serves in background threads."""

    def __init__(self, registry: Registry, options: GatewayOptions = GatewayOptions()):
        self.registry, self.options = registry, options
        self.metrics = Metrics()
        self.balancer = Balancer()
        self.queue = CallQueue(self._deliver, self._queue_workers_wanted,
                               QueueOptions(ack_wait_s=options.ack_wait_s, max_attempts=options.max_attempts))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._stop_lock = threading.Lock()
        self._routes = [
            (re.compile(rf"^/function/{NAME}(?P<rest>/.*)?$"), None, self._invoke),
            (re.compile(rf"^/async-function/{NAME}(?P<rest>/.*)?$"), {"POST"}, self._enqueue),
            (re.compile(r"^/system/functions$"), {"GET"}, self._list_functions),
            (re.compile(rf"^/system/function/{NAME}$"), {"GET"}, self._function_status),
            (re.compile(rf"^/system/scale-function/{NAME}$"), {"POST"}, self._scale),
            (re.compile(r"^/system/info$"), {"GET"}, self._info),
            (re.compile(r"^/healthz$"), {"GET"}, lambda req: Reply(200, [("Content-Type", "text/plain")], b"OK")),
            (re.compile(r"^/metrics$"), {"GET"}, self._metrics),
        ]

    @property
    def url(self) -> str:
        port = self._server.server_address[1] if self._server else self.options.port
        return f"http://{self.options.host}:{port}"

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Bind, then serve and deliver async calls in daemon threads; returns once listening."""
        self._bind()
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="faasgd-gateway", daemon=True)
        self._thread.start()
        self.queue.start()

    def serve_forever(self) -> None:
        """Serve in the calling thread until `stop()` is called from another thread."""
        self._thread = threading.current_thread()  # before binding: a stop() from now on shuts the loop down
        self._bind()
        self.queue.start()
        try:
            self._server.serve_forever(0.05)
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop serving and the queue-workers; calls in flight may finish. Idempotent."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        if self._server is not None:
            if self._thread is not None and self._thread is not threading.current_thread():
                self._server.shutdown()
            self._server.server_close()
        self.queue.stop()

    def _bind(self) -> None:
        if self._server is not None or self._stopped:
            raise RuntimeError("a LocalGateway starts once")
        self._server = _Server((self.options.host, self.options.port), _Handler)
        self._server.gateway = self

    # -- dispatch ----------------------------------------------------------------------------------
    def handle(self, request: Request) -> Reply:
        """Route one request; never raises."""
        for pattern, methods, route in self._routes:
            match = pattern.match(request.path)
            if match is None:
                continue
            if methods is not None and request.method not in methods:
                return _error(405, f"method {request.method} not allowed on {request.path}",
                              [("Allow", ", ".join(sorted(methods)))])
            try:
                return route(request, **match.groupdict())
            except Exception as exc:
                log.exception("%s %s failed", request.method, request.path)
                return _error(500, f"gateway error: {type(exc).__name__}: {exc}")
        return _error(404, f"not found: {request.path}")

    def body_limit(self, path: str) -> int | None:
        """The largest body read for `path` (None: no limit)."""
        return self.options.max_async_body_bytes if path.startswith("/async-function/") else None

    def _resolve(self, name: str) -> str | None:
        """The registry's name for a path's NAME or NAME.openfaas-fn; None if unknown."""
        names = self.registry.function_names()
        base, _, namespace = name.rpartition(".")
        if name in names:
            return name
        return base if namespace == NAMESPACE and base in names else None

    # -- /function and /async-function -------------------------------------------------------------
    def _invoke(self, req: Request, name: str, rest: str | None) -> Reply:
        call_id, start_ns = req.header("X-Call-Id") or str(uuid.uuid4()), time.time_ns()
        function = self._resolve(name)
        if function is None:
            reply = _error(404, f"function not found: {name}")
        else:
            headers = _upstream_headers(req, {"X-Call-Id": call_id, "X-Start-Time": str(start_ns)})
            reply = self.forward(function, req.method, rest or "", req.query, headers, req.body)
        reply.headers = _stamped(reply.headers, call_id, start_ns, self.options.version)
        reply.headers.append(("X-Duration-Seconds", f"{(time.time_ns() - start_ns) / 1e9:.6f}"))
        return reply

    def _enqueue(self, req: Request, name: str, rest: str | None) -> Reply:
        call_id, start_ns = req.header("X-Call-Id") or str(uuid.uuid4()), time.time_ns()
        function, callback = self._resolve(name), req.header("X-Callback-Url")
        if function is None:
            reply = _error(404, f"function not found: {name}")
        elif callback is not None and not _is_http_url(callback):
            reply = _error(400, f"X-Callback-Url: must be an http or https URL with a host, got {callback!r}")
        elif len(req.body) > self.options.max_async_body_bytes:
            reply = _error(413, f"request body: at most {self.options.max_async_body_bytes} bytes for an async call "
                                f"(the NATS message limit), got more")
        else:
            headers = _upstream_headers(req, {"X-Call-Id": call_id, "X-Start-Time": str(start_ns)})
            self.queue.put(AsyncCall(function, req.method, rest or "", req.query, headers, req.body, call_id,
                                     callback))
            reply = Reply(202, [], b"")
        reply.headers = _stamped(reply.headers, call_id, start_ns, self.options.version)
        return reply

    def forward(self, function: str, method: str, path: str, query: str, headers: list[tuple[str, str]],
                body: bytes) -> Reply:
        """Send one call to the least busy healthy replica; count it in the metrics."""
        self.metrics.started(function)
        began = time.monotonic()
        urls = self.registry.replica_urls(function)
        if not urls:
            reply = _error(502, f"no healthy replica of function {function}")
        else:
            url = self.balancer.acquire(function, urls)
            try:
                reply = self._call_replica(url, function, method, path or "/", query, headers, body)
            finally:
                self.balancer.release(url)
        reply.seconds = time.monotonic() - began
        self.metrics.completed(function, reply.status, reply.seconds)
        return reply

    def _call_replica(self, url, function, method, path, query, headers, body) -> Reply:
        parts, timeout = urlsplit(url), self.options.upstream_timeout_s
        deadline = time.monotonic() + timeout
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        try:
            conn.putrequest(method, path + (f"?{query}" if query else ""), skip_host=True, skip_accept_encoding=True)
            for key, value in [("Host", parts.netloc), *headers]:
                conn.putheader(key, value)
            if body or method in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            sock = conn.sock
            response = conn.getresponse()
            sock.settimeout(max(0.001, deadline - time.monotonic()))  # the body shares the deadline
            data = response.read()
        except TimeoutError:
            return _error(504, f"function {function} did not answer within the upstream timeout of {timeout:g}s",
                          replica=url)
        except (OSError, http.client.HTTPException) as exc:
            return _error(502, f"cannot reach function {function} at {url}: {type(exc).__name__}: {exc}",
                          replica=url)
        finally:
            conn.close()
        dropped = HOP_BY_HOP | _connection_tokens(response.getheader("Connection"))
        if method != "HEAD":
            dropped.add("content-length")
        kept = [(k, v) for k, v in response.getheaders() if k.lower() not in dropped | _STAMPS]
        return Reply(response.status, kept, data, replica=url)

    def _deliver(self, call: AsyncCall) -> Reply:
        headers = _replaced(call.headers, {"User-Agent": QUEUE_USER_AGENT, "X-Start-Time": str(time.time_ns())})
        return self.forward(call.name, call.method, call.path, call.query, headers, call.body)

    def _queue_workers_wanted(self) -> int:
        return self.options.queue_workers or self.registry.total_replicas()

    # -- /system, /metrics ---------------------------------------------------------------------------
    def _status(self, function: str) -> dict | None:
        described = self.registry.describe(function)
        return None if described is None else {**described, "invocationCount": self.metrics.invocation_count(function)}

    def _list_functions(self, req: Request) -> Reply:
        statuses = [self._status(name) for name in self.registry.function_names()]
        return _json(200, [s for s in statuses if s is not None])

    def _function_status(self, req: Request, name: str) -> Reply:
        function = self._resolve(name)
        status = self._status(function) if function else None
        return _json(200, status) if status else _error(404, f"function not found: {name}")

    def _scale(self, req: Request, name: str) -> Reply:
        function = self._resolve(name)
        if function is None:
            return _error(404, f"function not found: {name}")
        replicas, problem = _scale_request(req.body, function)
        if problem:
            return _error(400, problem)
        try:
            replicas = self.registry.scale(function, replicas)
        except ValueError as exc:
            return _error(400, str(exc))
        return _json(202, {"serviceName": function, "replicas": replicas})

    def _info(self, req: Request) -> Reply:
        release = {"release": self.options.version}
        return _json(200, {"provider": {"provider": "faasgd-local", "orchestration": "processes", "version": release},
                           "version": release, "arch": platform.machine()})

    def _metrics(self, req: Request) -> Reply:
        counts = {}
        for name in self.registry.function_names():
            counts[name] = int((self.registry.describe(name) or {}).get("availableReplicas") or 0)
        return Reply(200, [("Content-Type", METRICS_CONTENT_TYPE)], self.metrics.render(counts).encode())


def _scale_request(body: bytes, function: str) -> tuple[int | None, str | None]:
    """(replicas, None) from a scale body, or (None, a message naming the bad field)."""
    example = f'{{"serviceName": "{function}", "replicas": 2}}'
    try:
        data = json.loads(body or b"null")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, f"request body: must be a JSON object like {example}, got {body[:100]!r}"
    unknown = sorted(set(data) - set(SCALE_FIELDS))
    if unknown:
        return None, f"request body: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(SCALE_FIELDS)}"
    replicas = data.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        return None, f"replicas: must be an integer, got {json.dumps(replicas) if 'replicas' in data else 'nothing'}"
    if data.get("serviceName", function) not in (function, f"{function}.{NAMESPACE}"):
        return None, f"serviceName: must be the function in the path ({function}), got {data['serviceName']!r}"
    if data.get("namespace") not in (None, "", NAMESPACE):
        return None, f"namespace: must be {NAMESPACE} (the only namespace), got {data['namespace']!r}"
    return replicas, None


def _upstream_headers(req: Request, stamps: dict[str, str]) -> list[tuple[str, str]]:
    """The client's headers minus hop-by-hop ones, plus the gateway's stamps and X-Forwarded-*."""
    dropped = _NOT_FORWARDED | _connection_tokens(req.header("Connection"))
    headers = [(k, v) for k, v in req.headers if k.lower() not in dropped]
    extra = {"X-Forwarded-Host": req.header("Host"), "X-Forwarded-For": req.client}
    headers += [(k, v) for k, v in extra.items() if v and req.header(k) is None]
    return _replaced(headers, stamps)


def _replaced(headers: list[tuple[str, str]], values: dict[str, str]) -> list[tuple[str, str]]:
    lowered = {k.lower() for k in values}
    return [(k, v) for k, v in headers if k.lower() not in lowered] + list(values.items())


def _stamped(headers, call_id: str, start_ns: int, version: str) -> list[tuple[str, str]]:
    return _replaced(headers, {"X-Call-Id": call_id, "X-Start-Time": str(start_ns),
                               "X-Served-By": f"faasgd-local/{version}"})


def _connection_tokens(value: str | None) -> set[str]:
    return {token.strip().lower() for token in (value or "").split(",") if token.strip()}


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def _json(status: int, payload) -> Reply:
    return Reply(status, [("Content-Type", "application/json")], json.dumps(payload).encode())


def _error(status: int, message: str, headers: list[tuple[str, str]] = (), replica: str | None = None) -> Reply:
    reply = _json(status, {"error": message})
    reply.headers += list(headers)
    reply.error, reply.replica = message, replica
    return reply


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for calls in flight (they may take upstream_timeout_s)
    gateway: LocalGateway


class _Handler(BaseHTTPRequestHandler):
    """HTTP glue: parse the request, let the gateway answer, write the reply."""

    protocol_version = "HTTP/1.1"
    server_version = "faasgd-local"
    timeout = 120  # seconds an idle keep-alive connection is held

    def _dispatch(self) -> None:
        gateway: LocalGateway = self.server.gateway
        path, _, query = self.path.partition("?")
        try:
            body = self._read_body(gateway.body_limit(path))
        except ValueError as exc:
            self.close_connection = True
            reply = _error(400, str(exc))
        else:
            reply = gateway.handle(Request(self.command, path, query, list(self.headers.items()), body,
                                           self.client_address[0]))
        try:
            self._write(reply)
        except OSError as exc:  # the client went away
            log.debug("writing the reply to %s failed: %s", self.client_address, exc)
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def _read_body(self, limit: int | None) -> bytes:
        """The request body; past `limit`, limit+1 bytes and the connection is closed afterwards."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked(limit)
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        if not raw.strip().isdigit():
            raise ValueError(f"Content-Length: must be a non-negative integer, got {raw!r}")
        length = int(raw)
        if limit is not None and length > limit:
            self.close_connection = True
            return self.rfile.read(limit + 1)
        return self.rfile.read(length)

    def _read_chunked(self, limit: int | None) -> bytes:
        body = bytearray()
        while True:
            try:
                size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
            except ValueError:
                raise ValueError("Transfer-Encoding: malformed chunk size") from None
            if size == 0:
                break
            if limit is not None and len(body) + size > limit:
                self.close_connection = True
                return bytes(body + self.rfile.read(limit + 1 - len(body)))
            body += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return bytes(body)

    def _write(self, reply: Reply) -> None:
        self.log_request(reply.status)
        self.send_response_only(reply.status)
        names = {k.lower() for k, _ in reply.headers}
        defaults = {"server": ("Server", self.version_string()), "date": ("Date", self.date_time_string())}
        for key, value in [pair for name, pair in defaults.items() if name not in names] + reply.headers:
            self.send_header(key, value)  # the function's own Date and Server win, as in Go
        if "content-length" not in names and reply.status >= 200 and reply.status not in _NO_BODY_STATUSES:
            self.send_header("Content-Length", str(len(reply.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and reply.status >= 200 and reply.status not in _NO_BODY_STATUSES:
            self.wfile.write(reply.body)

    def log_message(self, format: str, *args) -> None:
        log.debug("%s %s", self.address_string(), format % args)

"""The local gateway against fake replicas: small HTTP servers on loopback that echo what they get.

Each fake replica answers JSON {method, path, query, headers, body, replica}; it can be told to
sleep, to answer a given status, or be stopped (a dead replica refuses connections). A fake
registry lists them. Every server and gateway a test starts is stopped by its fixture.
"""

from __future__ import annotations

import http.client
import json
import queue
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from faasgd.errors import ConfigError
from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.stores import free_port

pytestmark = pytest.mark.timeout(30)


# -- fakes ---------------------------------------------------------------------------------------
class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        replica: FakeReplica = self.server.replica
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        parts = urlsplit(self.path)
        record = {"method": self.command, "path": parts.path, "query": parts.query,
                  "headers": dict(self.headers.items()), "body": body.decode(), "replica": replica.name}
        with replica.lock:
            replica.calls.append(record)
        if replica.hang_up:  # dies mid-call: the connection closes without an answer
            self.close_connection = True
            return
        if replica.delay_s:
            replica.released.wait(replica.delay_s)
        payload = json.dumps(record).encode()
        self.send_response(replica.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Replica", replica.name)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

    def log_message(self, *args) -> None:
        pass


class FakeReplica:
    """An echo server on a free loopback port; `stop()` makes it a dead replica."""

    def __init__(self, name: str):
        self.name, self.delay_s, self.status, self.hang_up = name, 0.0, 200, False
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        self.released = threading.Event()  # set on stop, so sleeping handlers end at once
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
        self.server.daemon_threads, self.server.block_on_close = True, False
        self.server.replica = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.stopped = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.released.set()
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(2)


class FakeRegistry:
    """The gateway's Registry over FakeReplicas; `total` overrides total_replicas()."""

    def __init__(self, **functions: list[FakeReplica]):
        self.functions = dict(functions)
        self.total: int | None = None
        self.scaled: list[tuple[str, int]] = []

    def function_names(self) -> list[str]:
        return list(self.functions)

    def describe(self, name: str) -> dict | None:
        if name not in self.functions:
            return None
        n = len(self.functions[name])
        return {"name": name, "image": f"{name}:latest", "replicas": n, "availableReplicas": n,
                "labels": {}, "envProcess": "python index.py", "namespace": "openfaas-fn"}

    def replica_urls(self, name: str) -> list[str]:
        return [r.url for r in self.functions.get(name, [])]

    def scale(self, name: str, replicas: int) -> int:
        if not 1 <= replicas <= 5:
            raise ValueError(f"replicas: must be in [1, 5] for {name}, got {replicas}")
        self.scaled.append((name, replicas))
        return replicas

    def total_replicas(self) -> int:
        return self.total if self.total is not None else sum(len(r) for r in self.functions.values())


class CallbackServer:
    """Collects POSTed callbacks as (headers, body) in a queue."""

    def __init__(self):
        received: queue.Queue = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.put(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.received = received
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads, self.server.block_on_close = True, False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/done"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def next(self, timeout: float = 5.0) -> tuple[dict, bytes]:
        return self.received.get(timeout=timeout)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(2)


# -- fixtures and helpers ------------------------------------------------------------------------
@pytest.fixture
def replica():
    made: list[FakeReplica] = []

    def make(name: str = "r1") -> FakeReplica:
        made.append(FakeReplica(name))
        return made[-1]

    yield make
    for r in made:
        r.stop()


@pytest.fixture
def gateway():
    made: list[LocalGateway] = []

    def make(registry: FakeRegistry, **options) -> LocalGateway:
        made.append(LocalGateway(registry, GatewayOptions(port=0, **options)))
        made[-1].start()
        return made[-1]

    yield make
    for g in made:
        g.stop()


@pytest.fixture
def callback():
    server = CallbackServer()
    yield server
    server.stop()


def call(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 5.0):
    """One HTTP request; (status, lower-cased headers, body)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def call_raw_headers(url: str) -> list[tuple[str, str]]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        conn.request("GET", parts.path)
        response = conn.getresponse()
        response.read()
        return response.getheaders()
    finally:
        conn.close()


def wait_until(predicate, timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# -- /function -----------------------------------------------------------------------------------
def test_sync_invoke_passes_method_path_query_body_and_call_id(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica("a")]))
    status, headers, body = call("POST", gw.url + "/function/echo/some/path?x=1&y=two", b"hello",
                                 {"X-Custom": "yes", "Proxy-Authorization": "secret"})
    echoed = json.loads(body)
    assert status == 200 and headers["x-replica"] == "a"
    assert (echoed["method"], echoed["path"], echoed["query"], echoed["body"]) == ("POST", "/some/path", "x=1&y=two", "hello")
    assert echoed["headers"]["X-Custom"] == "yes" and "Proxy-Authorization" not in echoed["headers"]
    assert UUID.match(headers["x-call-id"]) and echoed["headers"]["X-Call-Id"] == headers["x-call-id"]
    assert int(headers["x-start-time"]) > 1_600_000_000 * 10**9
    assert headers["x-served-by"] == "faasgd-local/0.1.0" and float(headers["x-duration-seconds"]) >= 0
    assert echoed["headers"]["X-Forwarded-For"] == "127.0.0.1"
    raw = call_raw_headers(gw.url + "/function/echo")
    assert [k.lower() for k, _ in raw].count("date") == 1 and [k.lower() for k, _ in raw].count("server") == 1


def test_sync_invoke_methods_namespace_suffix_and_given_call_id(replica, gateway):
    r = replica("a")
    gw = gateway(FakeRegistry(echo=[r]))
    for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS"):
        status, _, body = call(method, gw.url + "/function/echo")
        assert status == 200 and json.loads(body)["method"] == method and json.loads(body)["path"] == "/"
    status, headers, body = call("HEAD", gw.url + "/function/echo.openfaas-fn/")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    status, headers, body = call("GET", gw.url + "/function/echo.openfaas-fn/x", headers={"X-Call-Id": "mine"})
    assert headers["x-call-id"] == "mine" and json.loads(body)["headers"]["X-Call-Id"] == "mine"
    assert json.loads(body)["path"] == "/x"
    r.status = 418
    assert call("GET", gw.url + "/function/echo")[0] == 418  # the function's status passes through


def test_least_in_flight_spreads_concurrent_calls_and_round_robins_ties(replica, gateway):
    a, b = replica("a"), replica("b")
    gw = gateway(FakeRegistry(echo=[a, b]))
    served = [call("GET", gw.url + "/function/echo")[1]["x-replica"] for _ in range(4)]
    assert sorted(served) == ["a", "a", "b", "b"]  # idle replicas: ties taken in turn
    a.delay_s = b.delay_s = 0.4
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(call("GET", gw.url + "/function/echo")[1]["x-replica"]))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(results) == ["a", "b"]


def test_unknown_function_is_404_json(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica()]))
    for path in ("/function/nope", "/function/nope/x", "/function/echo.other-ns"):
        status, headers, body = call("GET", gw.url + path)
        assert status == 404 and headers["content-type"] == "application/json"
        assert json.loads(body)["error"].startswith("function not found: ")
        assert "x-call-id" in headers


def test_dead_replica_and_no_replica_are_502_json(replica, gateway):
    dead, dying = replica("dead"), replica("dying")
    dead.stop()
    dying.hang_up = True
    gw = gateway(FakeRegistry(echo=[dead], empty=[], dying=[dying]))
    for name in ("echo", "empty", "dying"):
        status, headers, body = call("POST", gw.url + f"/function/{name}", b"x")
        assert status == 502 and headers["content-type"] == "application/json"
        assert name in json.loads(body)["error"]


def test_upstream_timeout_is_504_json(replica, gateway):
    slow = replica("slow")
    slow.delay_s = 5
    gw = gateway(FakeRegistry(echo=[slow]), upstream_timeout_s=0.3)
    began = time.monotonic()
    status, headers, body = call("GET", gw.url + "/function/echo")
    assert status == 504 and time.monotonic() - began < 2
    assert "upstream timeout" in json.loads(body)["error"]


def test_stop_does_not_wait_for_calls_in_flight(replica, gateway):
    slow = replica("slow")
    slow.delay_s = 10
    gw = gateway(FakeRegistry(echo=[slow]))
    sync_call = threading.Thread(target=lambda: call("GET", gw.url + "/function/echo", timeout=15), daemon=True)
    sync_call.start()
    call("POST", gw.url + "/async-function/echo", b"x")
    wait_until(lambda: len(slow.calls) == 2, what="a sync and an async call in flight")
    began = time.monotonic()
    gw.stop()
    assert time.monotonic() - began < 1
    slow.stop()
    sync_call.join(5)


# -- /async-function and the queue-worker ----------------------------------------------------------
def test_async_call_is_accepted_delivered_and_called_back(replica, gateway, callback):
    r = replica("a")
    gw = gateway(FakeRegistry(echo=[r]))
    status, headers, body = call("POST", gw.url + "/async-function/echo/sub?q=1", b"payload",
                                 {"X-Callback-Url": callback.url, "Content-Type": "text/plain"})
    assert (status, body) == (202, b"") and UUID.match(headers["x-call-id"]) and "x-start-time" in headers
    got, result = callback.next()
    assert got["x-call-id"] == headers["x-call-id"] and got["x-function-status"] == "200"
    assert got["x-function-name"] == "echo" and got["user-agent"] == "faasgd-local/queue-worker"
    assert got["content-type"] == "application/json" and float(got["x-duration-seconds"]) >= 0
    echoed = json.loads(result)
    assert (echoed["method"], echoed["path"], echoed["query"], echoed["body"]) == ("POST", "/sub", "q=1", "payload")
    assert echoed["headers"]["X-Call-Id"] == headers["x-call-id"]
    assert echoed["headers"]["User-Agent"] == "faasgd-local/queue-worker"
    wait_until(lambda: gw.queue.stats()["delivered"] == 1, what="delivery counted")
    assert gw.queue.stats()["in_flight"] == 0 and gw.queue.deliveries(headers["x-call-id"])[0]["status"] == 200


def test_async_rejects_unknown_function_bad_callback_big_body_and_get(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica()]))
    status, _, body = call("POST", gw.url + "/async-function/nope", b"x")
    assert status == 404 and json.loads(body)["error"] == "function not found: nope"
    for bad in ("ftp://host/x", "not a url", "http://"):
        status, _, body = call("POST", gw.url + "/async-function/echo", b"x", {"X-Callback-Url": bad})
        assert status == 400 and "X-Callback-Url" in json.loads(body)["error"]
    status, _, body = call("POST", gw.url + "/async-function/echo", b"x" * ((1 << 20) + 1))
    assert status == 413 and "request body" in json.loads(body)["error"]
    status, headers, _ = call("GET", gw.url + "/async-function/echo")
    assert status == 405 and headers["allow"] == "POST"
    assert gw.queue.stats()["accepted"] == 0


def test_slow_call_is_redelivered_after_ack_wait_with_the_same_call_id(replica, gateway, callback):
    slow = replica("slow")
    slow.delay_s = 0.8
    gw = gateway(FakeRegistry(echo=[slow]), ack_wait_s=0.3, queue_workers=2, max_attempts=2)
    _, headers, _ = call("POST", gw.url + "/async-function/echo", b"job", {"X-Callback-Url": callback.url})
    wait_until(lambda: len(slow.calls) == 2, what="a second delivery")
    assert [c["headers"]["X-Call-Id"] for c in slow.calls] == [headers["x-call-id"]] * 2
    assert [callback.next()[0]["x-call-id"] for _ in range(2)] == [headers["x-call-id"]] * 2  # one per delivery
    stats = gw.queue.stats()
    assert stats["redelivered"] == 1 and stats["delivered"] == 2 and stats["failed"] == 0
    assert [d["kind"] for d in gw.queue.deliveries(headers["x-call-id"])] == ["first", "redelivery"]


def test_call_failing_with_502_is_retried_until_a_replica_answers(replica, gateway, callback):
    dead, healthy = replica("dead"), replica("healthy")
    dead.stop()
    registry = FakeRegistry(echo=[dead])
    gw = gateway(registry, queue_workers=1)
    _, headers, _ = call("POST", gw.url + "/async-function/echo", b"job", {"X-Callback-Url": callback.url})
    wait_until(lambda: gw.queue.stats()["retried"] >= 1, what="a retry")
    registry.functions["echo"] = [healthy]
    got, _ = callback.next()
    assert got["x-function-status"] == "200" and got["x-call-id"] == headers["x-call-id"]
    statuses = [d["status"] for d in gw.queue.deliveries(headers["x-call-id"])]
    assert statuses[0] == 502 and statuses[-1] == 200 and gw.queue.stats()["failed"] == 0


def test_call_is_given_up_after_max_attempts_and_callback_reports_the_last_status(replica, gateway, callback):
    gw = gateway(FakeRegistry(echo=[]), max_attempts=2)
    _, headers, _ = call("POST", gw.url + "/async-function/echo", b"job", {"X-Callback-Url": callback.url})
    got, body = callback.next()
    assert got["x-function-status"] == "502" and "no healthy replica" in json.loads(body)["error"]
    stats = gw.queue.stats()
    assert (stats["delivered"], stats["retried"], stats["failed"]) == (2, 1, 1)
    assert [d["kind"] for d in gw.queue.deliveries(headers["x-call-id"])] == ["first", "retry"]


def test_queue_workers_follow_total_replicas(replica, gateway):
    registry = FakeRegistry(echo=[replica()])
    gw = gateway(registry)
    assert gw.queue.workers == 1
    registry.total = 3
    wait_until(lambda: gw.queue.workers == 3, what="3 queue workers")
    registry.total = 2
    wait_until(lambda: gw.queue.workers == 2, what="2 queue workers")


# -- /system, /metrics, /healthz ---------------------------------------------------------------------
def test_system_functions_with_invocation_count(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica()], other=[]))
    for _ in range(2):
        call("GET", gw.url + "/function/echo")
    status, _, body = call("GET", gw.url + "/system/functions")
    listed = {f["name"]: f for f in json.loads(body)}
    assert status == 200 and listed["echo"]["invocationCount"] == 2 and listed["other"]["invocationCount"] == 0
    assert listed["echo"]["availableReplicas"] == 1 and listed["echo"]["namespace"] == "openfaas-fn"
    status, _, body = call("GET", gw.url + "/system/function/echo.openfaas-fn")
    assert status == 200 and json.loads(body)["name"] == "echo"
    assert call("GET", gw.url + "/system/function/nope")[0] == 404


def test_scale_calls_the_registry_and_validates_the_body(replica, gateway):
    registry = FakeRegistry(echo=[replica()])
    gw = gateway(registry)
    scale = gw.url + "/system/scale-function/echo"
    status, _, body = call("POST", scale, json.dumps({"serviceName": "echo", "replicas": 3}).encode())
    assert status == 202 and json.loads(body) == {"serviceName": "echo", "replicas": 3}
    assert registry.scaled == [("echo", 3)]
    bad = {b"not json": "request body", b"[2]": "request body", b'{"serviceName": "echo"}': "replicas",
           b'{"replicas": "2"}': "replicas", b'{"replicas": 2.5}': "replicas", b'{"replicas": true}': "replicas",
           b'{"replicas": 2, "extra": 1}': "extra", b'{"serviceName": "other", "replicas": 2}': "serviceName",
           b'{"replicas": 9}': "replicas: must be in [1, 5]"}
    for payload, field in bad.items():
        status, _, body = call("POST", scale, payload)
        assert status == 400 and field in json.loads(body)["error"], payload
    assert registry.scaled == [("echo", 3)]
    assert call("POST", gw.url + "/system/scale-function/nope", b'{"replicas": 1}')[0] == 404
    assert call("GET", scale)[0] == 405


def test_metrics_parse_and_count_sync_and_async_calls(replica, gateway, callback):
    gw = gateway(FakeRegistry(echo=[replica()], empty=[]))
    for _ in range(2):
        call("GET", gw.url + "/function/echo")
    call("GET", gw.url + "/function/empty")
    call("POST", gw.url + "/async-function/echo", b"x", {"X-Callback-Url": callback.url})
    callback.next()
    status, headers, body = call("GET", gw.url + "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for line in body.decode().splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) gateway_\w+ .+$", line), line
            continue
        match = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:\w+="[^"]*",?)*)\} (\S+)$', line)
        assert match, line
        samples[(match[1], match[2])] = float(match[3])
    assert samples[("gateway_function_invocation_total", 'function_name="echo",code="200"')] == 3
    assert samples[("gateway_function_invocation_total", 'function_name="empty",code="502"')] == 1
    assert samples[("gateway_function_invocation_started", 'function_name="echo"')] == 3
    assert samples[("gateway_functions_seconds_count", 'function_name="echo",code="200"')] == 3
    assert samples[("gateway_functions_seconds_bucket", 'function_name="echo",code="200",le="+Inf"')] == 3
    assert samples[("gateway_service_count", 'function_name="echo"')] == 1
    assert samples[("gateway_service_count", 'function_name="empty"')] == 0


def test_healthz_info_unknown_paths_and_stop_is_idempotent(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica()]), version="9.9.9")
    assert call("GET", gw.url + "/healthz")[::2] == (200, b"OK")
    assert call("POST", gw.url + "/healthz")[0] == 405
    status, _, body = call("GET", gw.url + "/system/info")
    info = json.loads(body)
    assert status == 200 and info["provider"]["provider"] == "faasgd-local" and info["version"]["release"] == "9.9.9"
    for path in ("/", "/ui/", "/system/secrets", "/function/"):
        status, headers, body = call("GET", gw.url + path)
        assert status == 404 and "error" in json.loads(body)
    gw.stop()
    gw.stop()
    with pytest.raises(OSError):
        call("GET", gw.url + "/healthz", timeout=1)


def test_options_are_validated_naming_the_field():
    with pytest.raises(ConfigError, match="max_attempts"):
        GatewayOptions(max_attempts=0)
    with pytest.raises(ConfigError, match="queue_workers"):
        GatewayOptions(queue_workers=0)
    with pytest.raises(ConfigError, match="upstream_timeout_s"):
        GatewayOptions(upstream_timeout_s=0)


def test_free_port_is_unused_so_a_listed_but_absent_replica_is_502(gateway):
    class Absent:
        name, url = "absent", f"http://127.0.0.1:{free_port()}"

    gw = gateway(FakeRegistry(echo=[Absent()]))
    assert call("GET", gw.url + "/function/echo")[0] == 502

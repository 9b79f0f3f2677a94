"""The local gateway's routes, forwarding and metrics, in-process against fake replicas.

The app runs behind httpx.ASGITransport; replicas are ASGI echo apps reached through a transport
that routes by host (support.fake_replicas); time is a FakeClock. The async queue is tested in
test_local_queue.py, real sockets in tests/integration/test_gateway_http.py.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from faasgd.errors import ConfigError
from faasgd.local.gateway import GatewayOptions
from support.fake_replicas import FakeRegistry, FakeReplica
from support.local_gateway import gateway_in_process, within

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
INVOKE_ALLOW = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"


def error_of(response) -> str:
    assert response.headers["content-type"] == "application/json", response.text
    return response.json()["error"]


# -- /function -----------------------------------------------------------------------------------
async def test_sync_invoke_passes_method_path_query_body_and_call_id():
    async with gateway_in_process(FakeRegistry(echo=[FakeReplica("a")])) as gw:
        response = await gw.client.post("/function/echo/some/p%2Fath?x=1&y=two", content=b"hello",
                                        headers={"X-Custom": "yes", "Proxy-Authorization": "secret",
                                                 "Connection": "close, X-Hop", "X-Hop": "dropped"})
    echoed, headers = response.json(), response.headers
    assert response.status_code == 200 and headers["x-replica"] == "a"
    assert (echoed["method"], echoed["path"], echoed["query"], echoed["body"]) == \
        ("POST", "/some/p%2Fath", "x=1&y=two", "hello")
    sent = echoed["headers"]
    assert sent["x-custom"] == "yes" and "proxy-authorization" not in sent and "x-hop" not in sent
    assert UUID.match(headers["x-call-id"]) and sent["x-call-id"] == headers["x-call-id"]
    assert int(headers["x-start-time"]) > 1_600_000_000 * 10**9 and sent["x-start-time"] == headers["x-start-time"]
    assert headers["x-served-by"] == "faasgd-local/0.1.0" and float(headers["x-duration-seconds"]) >= 0
    assert sent["x-forwarded-for"] == "127.0.0.1" and sent["x-forwarded-host"] == "gateway.test"
    assert [k for k, _ in response.headers.multi_items()].count("date") == 1
    assert response.headers["server"] == "faasgd-local"


async def test_sync_invoke_methods_namespace_suffix_and_given_call_id():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS"):
            response = await gw.client.request(method, "/function/echo")
            assert response.status_code == 200 and response.json()["method"] == method
            assert response.json()["path"] == "/"
        response = await gw.client.head("/function/echo.openfaas-fn/")
        assert response.status_code == 200 and response.content == b"" and int(response.headers["content-length"]) > 0
        response = await gw.client.get("/function/echo.openfaas-fn/x", headers={"X-Call-Id": "mine"})
        assert response.headers["x-call-id"] == "mine" and response.json()["headers"]["x-call-id"] == "mine"
        assert response.json()["path"] == "/x"
        assert (await gw.client.get("/function/ech%6F")).status_code == 200  # the name is percent-decoded
        replica.status = 418
        assert (await gw.client.get("/function/echo")).status_code == 418  # the function's status passes through


async def test_least_in_flight_spreads_concurrent_calls_and_round_robins_ties():
    a, b = FakeReplica("a"), FakeReplica("b")
    async with gateway_in_process(FakeRegistry(echo=[a, b])) as gw:
        served = [(await gw.client.get("/function/echo")).headers["x-replica"] for _ in range(4)]
        assert served == ["a", "b", "a", "b"]  # idle replicas: ties taken in turn
        a.hold = True
        held = asyncio.create_task(gw.client.get("/function/echo"))
        await within(a.arrived(3))  # idle replicas again: the turn says a
        served = [(await within(gw.client.get("/function/echo"))).headers["x-replica"] for _ in range(3)]
        assert served == ["b", "b", "b"]  # the busy replica is skipped, whatever the turn
        a.release()
        assert (await within(held)).headers["x-replica"] == "a"


class FullRegistry(FakeRegistry):
    """Replicas running one call each at once, and a replica starting until the test adds it."""

    def starting(self, name: str) -> bool:
        return True

    threads = 1

    def calls_per_replica(self, name: str) -> int:
        return self.threads


async def test_a_call_for_full_replicas_waits_at_the_gateway_for_the_starting_one():
    a, b = FakeReplica("a"), FakeReplica("b")
    registry = FullRegistry(echo=[a])
    async with gateway_in_process(registry, replica_wait_s=60) as gw:
        gw.transport.add(b)
        a.hold = True
        first = asyncio.create_task(gw.client.get("/function/echo"))
        await within(a.arrived(1))
        second = asyncio.create_task(gw.client.get("/function/echo"))
        await within(gw.clock.sleeping(0.02))  # held at the gateway: a has no thread free, b is starting
        assert len(a.calls) == 1 and not second.done()
        registry.functions["echo"] = [a, b]  # b serves now
        await gw.clock.advance(0.02)
        answer = await within(second)
        assert answer.headers.get("x-replica") == "b", answer.text
        a.release()
        assert (await within(first)).headers["x-replica"] == "a" and len(a.calls) == 1


async def test_two_calls_at_once_never_both_take_a_replicas_last_thread():
    a, b = FakeReplica("a"), FakeReplica("b")
    registry = FullRegistry(echo=[a])
    registry.threads = 2
    async with gateway_in_process(registry, replica_wait_s=60) as gw:
        gw.transport.add(b)
        a.hold = True
        calls = [asyncio.create_task(gw.client.get("/function/echo")) for _ in range(3)]
        await within(a.arrived(2))
        await within(gw.clock.sleeping(0.02))  # the third is held: a's two threads are taken
        assert len(a.calls) == 2
        registry.functions["echo"] = [a, b]
        await gw.clock.advance(0.02)
        await within(b.arrived(1))
        a.release()
        served = sorted([(await within(call)).headers.get("x-replica") for call in calls])
    assert served == ["a", "a", "b"] and len(a.calls) == 2


async def test_methods_not_served_are_405_json_with_allow():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        for method in ("TRACE", "CONNECT", "BREW"):
            response = await gw.client.request(method, "/function/echo/x")
            assert response.status_code == 405 and response.headers["allow"] == INVOKE_ALLOW
            assert error_of(response) == f"method {method} not allowed on /function/echo/x"
        response = await gw.client.patch("/system/functions")
        assert response.status_code == 405 and response.headers["allow"] == "DELETE, GET, HEAD, POST, PUT"
    assert replica.calls == []


async def test_unknown_function_is_404_json():
    async with gateway_in_process(FakeRegistry(echo=[FakeReplica("a")])) as gw:
        for path in ("/function/nope", "/function/nope/x", "/function/echo.other-ns"):
            response = await gw.client.get(path)
            assert response.status_code == 404 and error_of(response).startswith("function not found: ")
            assert "x-call-id" in response.headers


async def test_dead_replica_no_replica_and_hang_up_are_502_json():
    dead, dying = FakeReplica("dead"), FakeReplica("dying")
    dead.dead, dying.hang_up = True, True
    async with gateway_in_process(FakeRegistry(echo=[dead], empty=[], dying=[dying])) as gw:
        for name, expected in (("echo", "ConnectError"), ("empty", "no healthy replica"),
                               ("dying", "RemoteProtocolError")):
            response = await gw.client.post(f"/function/{name}", content=b"x")
            assert response.status_code == 502 and name in error_of(response) and expected in error_of(response)


async def test_upstream_timeout_is_504_json():
    slow = FakeReplica("slow")
    slow.hold = True
    async with gateway_in_process(FakeRegistry(echo=[slow]), upstream_timeout_s=7.5) as gw:
        call = asyncio.create_task(gw.client.get("/function/echo"))
        await within(gw.clock.sleeping(7.5))
        await gw.clock.advance(7.5)
        response = await within(call)
        slow.release()
    assert response.status_code == 504 and "upstream timeout of 7.5s" in error_of(response)


async def test_sync_body_over_the_limit_is_413():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica]), max_sync_body_bytes=10) as gw:
        assert (await gw.client.post("/function/echo", content=b"x" * 10)).status_code == 200
        response = await gw.client.post("/function/echo", content=b"x" * 11)
    assert response.status_code == 413 and "at most 10 bytes" in error_of(response)
    assert len(replica.calls) == 1


# -- /system, /metrics, /healthz ---------------------------------------------------------------------
async def test_system_functions_with_invocation_count():
    async with gateway_in_process(FakeRegistry(echo=[FakeReplica("a")], other=[])) as gw:
        for _ in range(2):
            await gw.client.get("/function/echo")
        response = await gw.client.get("/system/functions")
        listed = {f["name"]: f for f in response.json()}
        assert response.status_code == 200 and listed["echo"]["invocationCount"] == 2
        assert listed["other"]["invocationCount"] == 0
        assert listed["echo"]["availableReplicas"] == 1 and listed["echo"]["namespace"] == "openfaas-fn"
        response = await gw.client.get("/system/function/echo.openfaas-fn")
        assert response.status_code == 200 and response.json()["name"] == "echo"
        assert response.json()["invocationCount"] == 2
        assert (await gw.client.get("/system/function/nope")).status_code == 404


async def test_scale_calls_the_registry_and_validates_the_body():
    registry = FakeRegistry(echo=[FakeReplica("a")])
    bad = {b"not json": "request body", b"[2]": "request body", b'{"serviceName": "echo"}': "replicas",
           b'{"replicas": "2"}': "replicas", b'{"replicas": 2.5}': "replicas", b'{"replicas": true}': "replicas",
           b'{"replicas": 2, "extra": 1}': "extra", b'{"replicas": -1}': "replicas: must be a whole number >= 0",
           b'{"replicas": 2, "namespace": "x"}': "namespace"}
    async with gateway_in_process(registry) as gw:
        scale = "/system/scale-function/echo"
        response = await gw.client.post(scale, json={"serviceName": "echo", "replicas": 3})
        assert response.status_code == 202 and response.json() == {"serviceName": "echo", "replicas": 3}
        for payload, field in bad.items():
            response = await gw.client.post(scale, content=payload)
            assert response.status_code == 400 and field in error_of(response), payload
        assert (await gw.client.post("/system/scale-function/nope", content=b'{"replicas": 1}')).status_code == 404
        assert (await gw.client.get(scale)).status_code == 405
    assert registry.scaled == [("echo", 3)]


def parse_metrics(text: str) -> dict[tuple[str, frozenset], float]:
    """Samples by (name, labels); every line must be a HELP/TYPE comment or a sample."""
    samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) gateway_\w+ .+$", line), line
            continue
        match = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:\w+="[^"]*",?)*)\} (\S+)$', line)
        assert match, line
        samples[(match[1], frozenset(re.findall(r'(\w+)="([^"]*)"', match[2])))] = float(match[3])
    return samples


async def test_metrics_parse_and_count_sync_and_async_calls():
    async with gateway_in_process(FakeRegistry(echo=[FakeReplica("a")], empty=[])) as gw:
        for _ in range(2):
            await gw.client.get("/function/echo")
        await gw.client.get("/function/empty")
        await gw.client.get("/function/nope")  # not counted: unknown names would be unbounded labels
        await gw.client.post("/async-function/echo", content=b"x", headers={"X-Callback-Url": gw.callbacks.url})
        await within(gw.callbacks.next())
        response = await gw.client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = dict(re.findall(r"^# TYPE (\S+) (\S+)$", response.text, re.MULTILINE))
    assert families == {"gateway_function_invocation_total": "counter", "gateway_functions_seconds": "histogram",
                        "gateway_service_count": "gauge", "gateway_function_invocation_started": "counter"}
    helps = dict(re.findall(r"^# HELP (\S+) (.+)$", response.text, re.MULTILINE))
    assert helps["gateway_function_invocation_total"] == "Function metrics"
    assert helps["gateway_functions_seconds"] == "Function time taken"
    assert helps["gateway_service_count"] == "Current count of replicas for function"
    assert helps["gateway_function_invocation_started"] == "The total number of function HTTP requests started."
    samples = parse_metrics(response.text)
    echo_200 = {("function_name", "echo"), ("code", "200")}
    assert samples[("gateway_function_invocation_total", frozenset(echo_200))] == 3
    assert samples[("gateway_function_invocation_total", frozenset({("function_name", "empty"), ("code", "502")}))] == 1
    assert samples[("gateway_function_invocation_started", frozenset({("function_name", "echo")}))] == 3
    assert samples[("gateway_functions_seconds_count", frozenset(echo_200))] == 3
    assert samples[("gateway_functions_seconds_bucket", frozenset(echo_200 | {("le", "+Inf")}))] == 3
    assert samples[("gateway_service_count", frozenset({("function_name", "echo")}))] == 1
    assert samples[("gateway_service_count", frozenset({("function_name", "empty")}))] == 0
    assert not [key for key in samples if "nope" in str(key) or key[0].endswith("_created")]
    buckets = sorted(float(dict(labels)["le"]) for name, labels in samples
                     if name == "gateway_functions_seconds_bucket" and ("code", "200") in labels)
    assert buckets == [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, float("inf")]


async def test_healthz_info_and_unknown_paths():
    async with gateway_in_process(FakeRegistry(echo=[FakeReplica("a")]), version="9.9.9") as gw:
        response = await gw.client.get("/healthz")
        assert (response.status_code, response.content) == (200, b"OK")
        assert (await gw.client.post("/healthz")).status_code == 405
        gw.broker.down = "nats-server at nats://127.0.0.1:1 is not connected (reconnecting)"
        response = await gw.client.get("/healthz")
        assert response.status_code == 503 and error_of(response) == f"queue: {gw.broker.down}"
        gw.broker.down = None
        assert (await gw.client.get("/healthz")).status_code == 200
        info = (await gw.client.get("/system/info")).json()
        assert info["provider"]["provider"] == "faasgd-local" and info["version"]["release"] == "9.9.9"
        for path in ("/", "/ui/", "/system/secrets", "/function/", "/healthz/", "/function"):
            response = await gw.client.get(path)
            assert response.status_code == 404 and error_of(response) == f"not found: {path}"


def test_options_are_validated_naming_the_field():
    for field, value in (("queue_workers", 0), ("upstream_timeout_s", 0), ("ack_wait_s", -1),
                         ("port", 70000), ("max_sync_body_bytes", 0), ("max_async_body_bytes", 1.5),
                         ("backlog", 0), ("delivery", "pro")):
        with pytest.raises(ConfigError, match=f"^{field}: "):
            GatewayOptions(**{field: value})

"""The local gateway over real sockets: LocalGateway (uvicorn) on a free loopback port, in front of
a FakeReplica and a CallbackRecorder that uvicorn serves on loopback too (support.asgi_server), its
queue on a real nats-server (one per test, its JetStream files in the test's tmp_path).

What only a real HTTP server shows: the accept backlog, unknown methods reaching the app, chunked
request bodies, the 413 on a body the client is still sending, stop() with calls in flight.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from urllib.parse import urlsplit

import pytest

from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.queue.jetstream import JetStreamBroker
from faasgd.local.services.broker import start_nats
from faasgd.local.services.stores import free_port
from support.asgi_server import serve
from support.fake_replicas import CallbackRecorder, FakeRegistry, FakeReplica
from support.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def gateway(tmp_path):
    made: list[LocalGateway] = []
    nats = start_nats(tmp_path / "jetstream")

    def make(registry: FakeRegistry, **options) -> LocalGateway:
        made.append(LocalGateway(registry, GatewayOptions(port=0, **options), broker=JetStreamBroker(nats.url)))
        made[-1].start()
        return made[-1]

    yield make
    for gw in made:
        gw.stop()
    nats.stop()


def call(method: str, url: str, body=None, headers: dict | None = None, timeout: float = 10.0, **kwargs):
    """One request on a new connection: (status, headers as sent, body)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body,
                     headers=headers or {}, **kwargs)
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        conn.close()


def header(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [v for k, v in headers if k.lower() == name]


def test_100_concurrent_posts_are_all_answered_none_reset(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica]))
    start, results = threading.Barrier(100), [None] * 100

    def post(i: int) -> None:
        start.wait()
        try:
            status, _, body = call("POST", gw.url + "/function/echo", f"call {i}".encode())
            results[i] = (status, json.loads(body)["body"])
        except Exception as exc:  # a reset or refused connection is what this test is about
            results[i] = (type(exc).__name__, str(exc))

    threads = [threading.Thread(target=post, args=(i,)) for i in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [(200, f"call {i}") for i in range(100)]


def test_trace_and_unknown_methods_are_405_json_with_allow(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica]))
    for method, path, allow in (("TRACE", "/function/echo", "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"),
                                ("BREW", "/function/echo/pot", "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"),
                                ("BREW", "/healthz", "GET, HEAD")):
        status, headers, body = call(method, gw.url + path)
        assert (status, header(headers, "allow")) == (405, [allow]), (method, path)
        assert header(headers, "content-type") == ["application/json"]
        assert json.loads(body)["error"] == f"method {method} not allowed on {path}"
    assert replica.calls == []


def test_headers_as_go_writes_them_date_and_server_once(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica]))
    _, headers, _ = call("GET", gw.url + "/function/echo")
    assert {"X-Call-Id", "X-Start-Time", "X-Served-By", "Content-Type", "X-Replica"} <= {k for k, _ in headers}
    assert len(header(headers, "date")) == 1 and header(headers, "server") == ["uvicorn"]  # the replica's
    status, headers, body = call("HEAD", gw.url + "/function/echo")
    assert (status, body) == (200, b"") and int(header(headers, "content-length")[0]) > 0
    _, headers, _ = call("GET", gw.url + "/healthz")
    assert len(header(headers, "date")) == 1 and header(headers, "server") == ["faasgd-local"]


def test_chunked_request_body_is_forwarded_intact(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica]))
    text = "".join(f"line {i}: {'x' * (i % 97)}\n" for i in range(5000)).encode()
    chunks = [text[i:i + 7777] for i in range(0, len(text), 7777)]
    status, _, body = call("POST", gw.url + "/function/echo", iter(chunks), encode_chunked=True,
                           headers={"Transfer-Encoding": "chunked"})
    assert status == 200 and json.loads(body)["body"].encode() == text
    sent = replica.calls[0]["headers"]
    assert sent["content-length"] == str(len(text)) and "transfer-encoding" not in sent


def test_async_body_over_the_nats_limit_is_413_while_the_client_still_sends(replica, gateway):
    gw = gateway(FakeRegistry(echo=[replica]))
    status, _, body = call("POST", gw.url + "/async-function/echo", b"x" * ((1 << 20) + 1))
    assert status == 413 and "at most 1048576 bytes" in json.loads(body)["error"]
    parts = urlsplit(gw.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("POST", "/async-function/echo", b"x" * (10 << 20))  # answered before it is all sent
        response = conn.getresponse()
        assert (response.status, json.loads(response.read())["error"].startswith("request body")) == (413, True)
        conn.request("POST", "/async-function/echo", b"x" * (1 << 20))  # the same connection goes on
        assert conn.getresponse().status == 202
    finally:
        conn.close()
    assert gw.queue.stats()["accepted"] == 1


def test_async_call_posts_its_callback_over_http(replica, gateway):
    recorder = CallbackRecorder()
    with serve(recorder) as url:
        gw = gateway(FakeRegistry(echo=[replica]))
        status, headers, _ = call("POST", gw.url + "/async-function/echo", b"job",
                                  {"X-Callback-Url": url + "/done"})
        wait_until(lambda: recorder.received, "the callback")
    got, body = recorder.received[0]
    assert status == 202 and got["x-call-id"] == header(headers, "x-call-id")[0]
    assert got["x-function-status"] == "200" and json.loads(body)["body"] == "job"


def test_a_listed_replica_that_is_not_listening_is_502(gateway):
    absent = FakeReplica("absent")
    absent.url = f"http://127.0.0.1:{free_port()}"
    gw = gateway(FakeRegistry(echo=[absent]))
    status, _, body = call("GET", gw.url + "/function/echo")
    assert status == 502 and "ConnectError" in json.loads(body)["error"]


def test_stop_does_not_wait_for_calls_in_flight(replica, gateway):
    replica.hold = True
    gw = gateway(FakeRegistry(echo=[replica]))
    outcome = []

    def sync_call_until_cut_off() -> None:
        try:
            outcome.append(call("GET", gw.url + "/function/echo")[0])
        except (OSError, http.client.HTTPException) as exc:
            outcome.append(type(exc).__name__)

    sync_call = threading.Thread(target=sync_call_until_cut_off, daemon=True)
    sync_call.start()
    call("POST", gw.url + "/async-function/echo", b"x")
    wait_until(lambda: len(replica.calls) == 2, "a sync and an async call in flight")
    began = time.monotonic()
    gw.stop()
    assert time.monotonic() - began < 1.0
    gw.stop()  # idempotent
    with pytest.raises(OSError):
        call("GET", gw.url + "/healthz", timeout=1)
    sync_call.join(5)
    assert outcome == [503]  # answered at once, not left hanging

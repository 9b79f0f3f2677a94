"""The gateway's limits over real sockets (LocalGateway on uvicorn + h11, gateway/limits.py), with bytes no HTTP
client library would send: every oversize URL, header set or body, and a body that stops coming, gets its 4xx
as JSON in time, the connection closed, and never reaches the replica; a request within the limits still does.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.gateway.limits import MAX_HEADERS, MAX_HEADER_BYTES, MAX_URL_BYTES
from faasgd.local.queue.jetstream import JetStreamBroker
from faasgd.local.services.broker import start_nats
from support.fake_replicas import FakeRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
IDLE_S = 1.0  # the gateway's body_idle_timeout_s here


@pytest.fixture
def port(tmp_path, replica):
    nats = start_nats(tmp_path / "jetstream")
    gateway = LocalGateway(FakeRegistry(echo=[replica]), GatewayOptions(port=0, body_idle_timeout_s=IDLE_S),
                           broker=JetStreamBroker(nats.url))
    gateway.start()
    try:
        yield int(gateway.url.rsplit(":", 1)[1])
    finally:
        gateway.stop()
        nats.stop()


def exchange(port: int, pieces: list[bytes], pause_s: float = 0.0, timeout_s: float = 10.0) -> tuple[int, dict, float]:
    """Send `pieces` (pausing between them; a reset while sending is taken as the server having answered), then
    read until the server closes: (status, JSON body, seconds from the first byte sent to the answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        started = time.monotonic()
        for piece in pieces:
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(pause_s)
        received = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
        took = time.monotonic() - started
    head, _, body = received.partition(b"\r\n\r\n")
    assert head, "the gateway closed without an answer"
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers.get("content-type") == "application/json" and headers.get("connection") == "close", headers
    return int(lines[0].split()[1]), json.loads(body), took


def head(target: str, headers: list[tuple[str, str]] = (), method: str = "GET") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def test_a_100000_character_job_id_is_a_414(port, replica):
    status, body, _ = exchange(port, [head("/function/echo?job_id=j" + "0" * 100_000)])
    assert status == 414 and "URL" in body["error"] and replica.calls == []


def test_a_url_just_within_the_limit_reaches_the_replica(port, replica):
    target = "/function/echo?job_id=" + "0" * (MAX_URL_BYTES - len("/function/echo?job_id="))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head(target, [("Connection", "close")]))
        answer = sock.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 200") and len(replica.calls) == 1


def test_a_url_sent_in_pieces_past_every_buffer_is_a_414(port, replica):
    line = b"GET /function/echo?job_id=" + b"0" * 60_000
    status, body, _ = exchange(port, [line[i:i + 4096] for i in range(0, len(line), 4096)], pause_s=0.005)
    assert status == 414 and "URL" in body["error"] and replica.calls == []


@pytest.mark.parametrize("case", ["200 header fields", "one 70 KB header", "headers sent in pieces"])
def test_too_many_or_too_large_headers_are_a_431(port, replica, case):
    if case == "200 header fields":
        pieces = [head("/function/echo", [(f"X-H{i}", "v") for i in range(2 * MAX_HEADERS)])]
    elif case == "one 70 KB header":
        pieces = [head("/function/echo", [("X-Big", "v" * 70_000)])]
    else:
        data = head("/function/echo", [("X-Big", "v" * (4 * MAX_HEADER_BYTES))])
        pieces = [data[i:i + 4096] for i in range(0, len(data), 4096)]
    status, body, _ = exchange(port, pieces, pause_s=0.005 if case == "headers sent in pieces" else 0.0)
    assert status == 431 and "header" in body["error"] and replica.calls == []


@pytest.mark.parametrize("path, limit", [("/function/echo", 32 << 20), ("/async-function/echo", 1 << 20)])
def test_a_100_gb_content_length_is_a_413_at_once_with_nothing_read(port, replica, path, limit):
    status, body, took = exchange(port, [head(path, [("Content-Length", str(100 << 30))], "POST") + b"{}"])
    assert status == 413 and f"at most {limit} bytes" in body["error"] and "nothing was read" in body["error"]
    assert took < IDLE_S, f"answered after {took:.2f} s: it waited for the body"
    assert replica.calls == []


@pytest.mark.parametrize("path", ["/function/echo", "/async-function/echo"])
def test_a_body_cut_short_is_a_408_after_the_idle_timeout_not_silence(port, replica, path):
    data = head(path, [("Content-Length", "100"), ("Content-Type", "application/json")], "POST")
    status, body, took = exchange(port, [data + b'{"number_of_workers": 1'])
    assert status == 408 and "no byte came" in body["error"]
    assert IDLE_S <= took < IDLE_S + 5, took
    assert replica.calls == []

"""The container backend's reachability: redis-server, memcached and the gateway answer on a second
address beside 127.0.0.1 (there, a Docker network's gateway address; here 127.0.0.2, also loopback on
Linux), and nowhere else."""

from __future__ import annotations

import socket

import httpx
import pytest

from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.gateway.server import listen
from faasgd.local.queue.jetstream import JetStreamBroker
from faasgd.local.services.broker import start_nats
from faasgd.local.services.stores import start_memcached, start_redis
from support.fake_replicas import FakeRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
SECOND = "127.0.0.2"


def answer(host: str, port: int, request: bytes) -> bytes:
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(request)
            return sock.recv(64)
    except OSError:
        return b""


@pytest.mark.parametrize("start, request_line, expected", [
    (start_redis, b"PING\r\n", b"+PONG"), (start_memcached, b"version\r\n", b"VERSION ")], ids=["redis", "memcached"])
def test_a_store_answers_on_both_addresses_and_not_on_a_third(start, request_line, expected):
    server = start(also_bind=SECOND)
    try:
        assert answer("127.0.0.1", server.port, request_line).startswith(expected)
        assert answer(SECOND, server.port, request_line).startswith(expected)  # redis: protected mode off there
        assert answer("127.0.0.3", server.port, request_line) == b""
    finally:
        server.stop()


def test_a_store_without_a_second_address_answers_on_loopback_only():
    server = start_redis()
    try:
        assert answer(SECOND, server.port, b"PING\r\n") == b""
    finally:
        server.stop()


def test_the_gateway_serves_every_listener_it_is_given(tmp_path):
    nats = start_nats(tmp_path / "jetstream")
    first = listen("127.0.0.1", 0)
    port = first.getsockname()[1]
    gateway = LocalGateway(FakeRegistry(), GatewayOptions(port=port), broker=JetStreamBroker(nats.url))
    try:
        gateway.start(first, (listen(SECOND, port),))
        for host in ("127.0.0.1", SECOND):
            assert httpx.get(f"http://{host}:{port}/healthz", timeout=5, trust_env=False).status_code == 200
    finally:
        gateway.stop()
        nats.stop()

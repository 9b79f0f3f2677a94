"""The async queue on a real nats-server with JetStream (started on a free loopback port and
stopped by each test): the broker contract (support/broker_contract.py), then the gateway's queue
end to end over HTTP: survival of its owner's restart and of nats-server's, `ce` not retrying a
503 and `pro` retrying it until it succeeds, redelivery after ack_wait with the same call id,
nothing left in the stream after calls finish, and the 1 MiB body limit.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import nats as nats_client
import pytest

from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.queue.jetstream import JetStreamBroker, STREAM
from faasgd.local.queue.rules import DeliveryPolicy
from faasgd.local.services.broker import DEFAULT_MAX_PAYLOAD, start_nats
from support.broker_contract import CHECKS
from support.fake_replicas import FakeRegistry
from support.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.fixture
def nats(tmp_path):
    servers = []

    def start(port=None):
        servers.append(start_nats(tmp_path / "jetstream", port=port))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()
    assert not [s for s in servers if s.alive()]


class NatsHarness:
    max_payload = DEFAULT_MAX_PAYLOAD

    def __init__(self, url: str):
        self.url = url

    def make(self) -> JetStreamBroker:
        return JetStreamBroker(self.url)

    async def elapse(self, seconds: float) -> None:
        pass  # JetStream keeps real time; next() waits for the hand-out


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_jetstream_keeps_the_broker_contract(nats, check):
    asyncio.run(asyncio.wait_for(check(NatsHarness(nats().url)), 60))


# -- the gateway's queue on JetStream, over HTTP ----------------------------------------------------
@pytest.fixture
def gateway():
    made: list[LocalGateway] = []

    def make(nats_url: str, registry: FakeRegistry, **options) -> LocalGateway:
        made.append(LocalGateway(registry, GatewayOptions(port=0, **options), broker=JetStreamBroker(nats_url)))
        made[-1].start()
        return made[-1]

    yield make
    for gw in made:
        gw.stop()


def post_async(gw: LocalGateway, body: bytes, callback: str | None = None) -> str:
    headers = {"X-Callback-Url": callback} if callback else {}
    response = httpx.post(gw.url + "/async-function/echo", content=body, headers=headers, timeout=30)
    assert response.status_code == 202, response.text
    return response.headers["x-call-id"]


def stream_messages(url: str) -> int:
    """The messages JetStream keeps, read on a connection of the test's own."""
    async def count() -> int:
        nc = await nats_client.connect(url)
        try:
            return (await nc.jetstream().stream_info(STREAM)).state.messages
        finally:
            await nc.close()

    return asyncio.run(count())


def test_queued_and_in_flight_calls_survive_a_restart_of_the_runtime_and_of_nats_server(nats, gateway, replica,
                                                                                       callbacks):
    replica.hold = True
    server = nats()
    old = gateway(server.url, FakeRegistry(echo=[replica]), queue_workers=1)
    ids = [post_async(old, f"call {i}".encode(), callbacks.url) for i in range(3)]
    wait_until(lambda: len(replica.calls) == 1, "the first call to be in flight")
    old.stop()  # the owner goes with one call in flight and two queued
    server.stop()  # and so does nats-server: the stream is on disk
    assert not callbacks.received
    server = nats()  # a new port, the same store
    assert stream_messages(server.url) == 3
    replica.release()
    gateway(server.url, FakeRegistry(echo=[replica]), queue_workers=1)
    wait_until(lambda: len(callbacks.received) == 3, "three callbacks")
    assert sorted(headers["x-call-id"] for headers, _ in callbacks.received) == sorted(ids)
    assert {headers["x-function-status"] for headers, _ in callbacks.received} == {"200"}
    assert sorted(call["body"] for call in replica.calls[1:]) == ["call 0", "call 1", "call 2"]
    assert stream_messages(server.url) == 0  # finished calls leave nothing behind


def test_ce_does_not_retry_a_503(nats, gateway, replica, callbacks):
    replica.status = 503
    server = nats()
    gw = gateway(server.url, FakeRegistry(echo=[replica]), ack_wait_s=1)
    call_id = post_async(gw, b"job", callbacks.url)
    wait_until(lambda: callbacks.received, "the callback")
    time.sleep(2.5)  # past ack_wait: an acked call is not delivered again either
    headers, _ = callbacks.received[0]
    assert (headers["x-call-id"], headers["x-function-status"]) == (call_id, "503")
    assert len(replica.calls) == len(callbacks.received) == 1 and gw.queue.stats()["failed"] == 1
    assert stream_messages(server.url) == 0


def test_pro_retries_a_503_until_the_function_answers(nats, gateway, replica, callbacks):
    replica.status = 503
    server = nats()
    policy = DeliveryPolicy("pro", retry_wait_s=0.2, max_retry_wait_s=0.4, max_attempts=20)
    gw = gateway(server.url, FakeRegistry(echo=[replica]), delivery=policy)
    call_id = post_async(gw, b"job", callbacks.url)
    wait_until(lambda: len(replica.calls) >= 3, "two retries")
    replica.status = 200
    wait_until(lambda: callbacks.received, "the callback")
    headers, _ = callbacks.received[0]
    assert (headers["x-call-id"], headers["x-function-status"], len(callbacks.received)) == (call_id, "200", 1)
    statuses = [d["status"] for d in gw.queue.deliveries(call_id)]
    assert statuses[-1] == 200 and set(statuses[:-1]) == {503} and len(statuses) == len(replica.calls)
    assert {call["headers"]["x-call-id"] for call in replica.calls} == {call_id}
    assert stream_messages(server.url) == 0


def test_a_call_unfinished_after_ack_wait_is_delivered_again_with_the_same_call_id(nats, gateway, replica, callbacks):
    replica.hold = True
    server = nats()
    gw = gateway(server.url, FakeRegistry(echo=[replica]), ack_wait_s=1, queue_workers=2)
    call_id = post_async(gw, b"slow job", callbacks.url)
    wait_until(lambda: len(replica.calls) == 2, "the redelivery")
    assert [call["headers"]["x-call-id"] for call in replica.calls] == [call_id] * 2
    replica.release()
    wait_until(lambda: len(callbacks.received) == 2, "a callback per delivery")
    assert [d["kind"] for d in gw.queue.deliveries(call_id)] == ["first", "redelivery"]
    assert stream_messages(server.url) == 0


def test_a_body_of_exactly_the_async_limit_goes_through_jetstream_intact(nats, gateway, replica, callbacks):
    server = nats()
    gw = gateway(server.url, FakeRegistry(echo=[replica]))
    body = bytes(range(97, 123)) * ((1 << 20) // 26) + b"z" * ((1 << 20) % 26)
    assert len(body) == 1 << 20
    post_async(gw, body, callbacks.url)
    wait_until(lambda: callbacks.received, "the callback")
    assert replica.calls[0]["body"].encode() == body
    response = httpx.post(gw.url + "/async-function/echo", content=body + b"!", timeout=30)
    assert response.status_code == 413
    assert stream_messages(server.url) == 0

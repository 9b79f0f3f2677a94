"""The async queue on a real nats-server with JetStream (started on a free loopback port and
stopped by each test): the broker contract (support/broker_contract.py), then the gateway's queue
end to end over HTTP: survival of its owner's restart and of nats-server's, `ce` not retrying a
503 and `pro` retrying it until it succeeds, redelivery after ack_wait with the same call id,
nothing left in the stream after calls finish, and the 1 MiB body limit.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from faasgd.local.broker import DEFAULT_MAX_PAYLOAD, start_nats
from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.gateway.queue_jetstream import JetStreamBroker
from faasgd.local.queue_rules import DeliveryPolicy
from support.asgi_server import serve
from support.broker_contract import CHECKS
from support.fake_replicas import CallbackRecorder, FakeRegistry, FakeReplica

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]
WAIT_S = 20.0


@pytest.fixture
def nats(tmp_path):
    servers = []

    def start(port=None):
        servers.append(start_nats(tmp_path / "jetstream", port=port))
        return servers[-1]

    start.store = tmp_path / "jetstream"
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
def wait_until(predicate, what: str, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def replica():
    made = FakeReplica("a")
    with serve(made) as url:
        made.url = url
        yield made
        made.release()


@pytest.fixture
def callbacks():
    recorder = CallbackRecorder()
    with serve(recorder) as url:
        recorder.url = url + "/done"
        yield recorder


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


def post_async(gw: LocalGateway, body: bytes, callback: str | None = None, path: str = "/async-function/echo") -> str:
    import httpx

    headers = {"X-Callback-Url": callback} if callback else {}
    response = httpx.post(gw.url + path, content=body, headers=headers, timeout=30)
    assert response.status_code == 202, response.text
    return response.headers["x-call-id"]


def stored(gw: LocalGateway) -> int:
    future = asyncio.run_coroutine_threadsafe(gw.queue.broker.stored(), _loop_of(gw))
    return future.result(10)


def _loop_of(gw: LocalGateway):
    return gw.queue._room._get_loop()  # the gateway's own event loop, where its nats connection lives

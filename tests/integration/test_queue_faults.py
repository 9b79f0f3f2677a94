"""The async queue on a real nats-server under faults: the broker killed with SIGKILL (the watch starts it
again on the same port and store, the gateway reconnects, /healthz says 503 naming the queue meanwhile and
every call gets an answer), and a small disk (a tmpfs of its own: JetStream's limit is sized to it, a call
it has no room for is answered 503 and never delivered, an accepted one is delivered exactly once, and the
queue takes calls again once room returns, without a restart of the runtime); /healthz says 503 naming the
queue's want of room while it refuses calls for it, and 200 again once delivered calls have left the stream."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.queue.jetstream import JetStreamBroker, PUBLISH_S
from faasgd.local.services.broker import (DEFAULT_STORE_BYTES, MIN_STORE_BYTES, QueueDiskTooSmall, start_nats,
                                          store_limit)
from faasgd.local.services.broker_watch import BrokerWatch
from support.fake_replicas import FakeRegistry
from support.small_disk import small_disk as disk_of
from support.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
ANSWER_BOUND_S = PUBLISH_S + 1.0  # every async call is answered by then, whatever the broker does
CALL = 900 * 1024


@pytest.fixture
def queue_on(replica):
    """queue_on(store_dir): nats-server on `store_dir` under a BrokerWatch, and a gateway on it."""
    made = []

    def start(store_dir: Path, watch_s: float = 0.2, stuck_s: float = 10.0,
              max_store: int = DEFAULT_STORE_BYTES) -> tuple[BrokerWatch, LocalGateway]:
        server = start_nats(store_dir, max_store=max_store)
        watcher = BrokerWatch(server, watch_s=watch_s, stuck_s=stuck_s).start()
        made.append((server, watcher))
        gateway = LocalGateway(FakeRegistry(echo=[replica]), GatewayOptions(port=0, queue_workers=4),
                               broker=JetStreamBroker(server.url))
        gateway.start()
        made.append(gateway)
        return watcher, gateway

    yield start
    replica.release()
    for item in reversed(made):
        if isinstance(item, LocalGateway):
            item.stop()
        else:
            server, watcher = item
            watcher.stop()
            server.stop()
            assert not watcher.server.alive()


def post_async(gateway: LocalGateway, body: bytes, callback: str, call_id: str | None = None) -> httpx.Response:
    started = time.monotonic()
    headers = {"X-Callback-Url": callback, **({"X-Call-Id": call_id} if call_id else {})}
    response = httpx.post(gateway.url + "/async-function/echo", content=body, headers=headers, timeout=30)
    assert time.monotonic() - started < ANSWER_BOUND_S, "the call was not answered within the bound"
    assert response.status_code in (202, 503), response.text
    if response.status_code == 503:
        assert response.headers["retry-after"] and response.json()["error"].startswith("queue: ")
    return response


def healthz(gateway: LocalGateway) -> httpx.Response:
    return httpx.get(gateway.url + "/healthz", timeout=10)


def test_a_killed_broker_is_started_again_and_the_gateway_carries_on(tmp_path, queue_on, replica, callbacks):
    watcher, gateway = queue_on(tmp_path / "jetstream", watch_s=3.0)  # slow to look: the outage lasts seconds
    replica.hold = True
    first = post_async(gateway, b"before", callbacks.url)
    assert first.status_code == 202
    wait_until(lambda: replica.calls, "the first call in flight")
    victim = watcher.server
    os.kill(victim.pid, signal.SIGKILL)
    seen = []
    wait_until(lambda: seen.append(healthz(gateway)) or seen[-1].status_code == 503, "/healthz to see it", 10)
    assert seen[-1].json()["error"].startswith("queue: nats-server at " + victim.url)
    refused = post_async(gateway, b"while down", callbacks.url)
    assert refused.status_code == 503 and "not connected" in refused.json()["error"]
    wait_until(lambda: watcher.restarts == 1 and healthz(gateway).status_code == 200, "the broker back", 20)
    assert (watcher.server.port, watcher.server.workdir) == (victim.port, victim.workdir) and watcher.problem is None
    later = post_async(gateway, b"after", callbacks.url)
    assert later.status_code == 202
    replica.release()
    wait_until(lambda: {h["x-call-id"] for h, _ in callbacks.received} >=
               {first.headers["x-call-id"], later.headers["x-call-id"]}, "both calls delivered", 30)
    assert sorted(call["body"] for call in replica.calls if call["body"] == "after") == ["after"]


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs of the test's own (root only), unmounted at the end."""
    with disk_of(tmp_path, "16m") as mount:
        yield mount


def test_the_queue_refuses_to_start_on_a_disk_without_room_naming_the_directory_and_the_flag(small_disk):
    (small_disk / "filler").write_bytes(b"\0" * (14 << 20))
    with pytest.raises(QueueDiskTooSmall) as refused:
        start_nats(small_disk / "jetstream")
    message = str(refused.value)
    assert str(small_disk / "jetstream") in message and f"{MIN_STORE_BYTES / (1 << 20):.1f} MiB" in message
    assert "faasgd up --dir" in message


def test_a_full_queue_answers_503_delivers_what_it_took_exactly_once_and_takes_calls_again(
        small_disk, queue_on, replica, callbacks):
    store = small_disk / "jetstream"
    store.mkdir()
    assert store_limit(store) < 16 << 20  # sized to the disk, not the 1 GiB default
    watcher, gateway = queue_on(store, stuck_s=2.0)
    replica.hold = True  # nothing is delivered (so nothing leaves the stream) until the disk is full
    answers = [post_async(gateway, bytes([65 + i % 26]) * CALL, callbacks.url) for i in range(20)]
    taken = [a.headers["x-call-id"] for a in answers if a.status_code == 202]
    refused = [a.headers["x-call-id"] for a in answers if a.status_code == 503]
    assert taken and refused, [a.status_code for a in answers]
    again = post_async(gateway, b"resent", callbacks.url, call_id=refused[0])  # the same call, sent again later
    assert again.status_code == 503
    health = healthz(gateway)
    assert health.status_code == 503 and "has no room for calls" in health.json()["error"], health.text
    replica.release()
    wait_until(lambda: len(callbacks.received) >= len(taken), "every accepted call delivered", 60)
    wait_until(lambda: healthz(gateway).status_code == 200, "/healthz to see the room delivered calls left", 10)
    time.sleep(2)  # any call delivered twice, or a refused one delivered late, would come now
    delivered = [h["x-call-id"] for h, _ in callbacks.received]
    assert sorted(delivered) == sorted(taken)  # exactly once each; never a refused one
    after = post_async(gateway, b"room again", callbacks.url)  # the stream emptied: room again, same broker
    assert after.status_code == 202 and watcher.restarts == 0
    wait_until(lambda: after.headers["x-call-id"] in [h["x-call-id"] for h, _ in callbacks.received], "the new call")


def test_a_disk_filled_by_others_gets_503s_and_the_queue_takes_calls_again_when_room_returns(
        small_disk, queue_on, replica, callbacks):
    """nats-server 2.9 answers a write that finds the disk full with an error, or stops answering at all:
    either way each call gets 503 within the bound, and the watch restarts a server that went silent."""
    watcher, gateway = queue_on(small_disk / "jetstream", stuck_s=2.0)
    replica.hold = True
    stored = [post_async(gateway, b"x" * CALL, callbacks.url) for _ in range(2)]
    assert [a.status_code for a in stored] == [202, 202]
    filler = small_disk / "filler"
    with open(filler, "wb") as f:  # someone else fills the disk the queue was sized for
        try:
            while True:
                f.write(b"\0" * (64 << 10))
                f.flush()
        except OSError:
            pass
    answers = [post_async(gateway, b"y" * CALL, callbacks.url) for _ in range(4)]
    assert [a.status_code for a in answers] == [503] * 4
    filler.unlink()
    later = []
    wait_until(lambda: later.append(post_async(gateway, b"later", callbacks.url)) or later[-1].status_code == 202,
               "the queue to take calls again once room returned", 60)
    replica.release()
    taken = {a.headers["x-call-id"] for a in stored + later if a.status_code == 202}
    wait_until(lambda: taken <= {h["x-call-id"] for h, _ in callbacks.received}, "every accepted call delivered", 60)
    time.sleep(2)  # any call delivered twice, or a refused one delivered late, would come now
    delivered = [h["x-call-id"] for h, _ in callbacks.received]
    assert sorted(delivered) == sorted(taken), (watcher.restarts, [a.json() for a in answers])


def test_healthz_reports_a_queue_at_its_store_limit_until_delivered_calls_make_room(tmp_path, queue_on, replica,
                                                                                       callbacks):
    """JetStream's max_file_store reached on a roomy disk (no root needed): the broker still answers, yet
    /healthz says 503 naming the want of room while calls are refused, and 200 once calls left the stream,
    before any call tries again."""
    watcher, gateway = queue_on(tmp_path / "jetstream", max_store=MIN_STORE_BYTES)
    replica.hold = True  # nothing leaves the stream until it is full
    assert healthz(gateway).status_code == 200
    answers = []
    for i in range(12):  # ~4 calls of 900 KiB fit in MIN_STORE_BYTES
        answers.append(post_async(gateway, bytes([65 + i]) * CALL, callbacks.url))
        if answers[-1].status_code == 503:
            break
    assert answers[-1].status_code == 503 and "no room" in answers[-1].json()["error"], answers[-1].text
    taken = [a.headers["x-call-id"] for a in answers if a.status_code == 202]
    health = healthz(gateway)
    assert health.status_code == 503, health.text
    error = health.json()["error"]
    assert error.startswith(f"queue: JetStream at {watcher.server.url} has no room for calls: it refused one of ")
    assert int(error.split("refused one of ")[1].split(" bytes")[0].replace(",", "")) > CALL  # the call, headers too
    assert healthz(gateway).status_code == 503  # it stays so while nothing leaves the stream
    replica.release()
    wait_until(lambda: healthz(gateway).status_code == 200, "/healthz to see the room delivered calls left", 30)
    after = post_async(gateway, b"room again", callbacks.url)
    assert after.status_code == 202 and watcher.restarts == 0
    wait_until(lambda: {*taken, after.headers["x-call-id"]} <= {h["x-call-id"] for h, _ in callbacks.received},
               "every accepted call delivered", 30)

"""/async-function and the local queue-worker, in-process: acceptance, callbacks, ack_wait
redelivery, retries with backoff, give-up, and the worker count. Time is a FakeClock the tests
advance, so ack_wait and backoff take no wall-clock time.
"""

from __future__ import annotations

import re

import pytest

from support.fake_replicas import FakeRegistry, FakeReplica
from support.local_gateway import gateway_in_process, within

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
RETRY_WAIT_S, RESIZE_S = 0.2, 0.5  # QueueOptions defaults


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_async_call_is_accepted_delivered_and_called_back():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        response = await gw.client.post("/async-function/echo/sub?q=1", content=b"payload",
                                        headers={"X-Callback-Url": gw.callbacks.url, "Content-Type": "text/plain"})
        call_id = response.headers["x-call-id"]
        assert (response.status_code, response.content) == (202, b"") and UUID.match(call_id)
        assert "x-start-time" in response.headers and response.headers["x-served-by"] == "faasgd-local/0.1.0"
        got, result = await within(gw.callbacks.next())
        stats = gw.queue.stats()
    assert got["x-call-id"] == call_id and got["x-function-status"] == "200" and got["x-function-name"] == "echo"
    assert got["user-agent"] == "faasgd-local/queue-worker" and got["content-type"] == "application/json"
    assert float(got["x-duration-seconds"]) >= 0 and got["x-replica"] == "a"
    echoed = replica.calls[0]
    assert (echoed["method"], echoed["path"], echoed["query"], echoed["body"]) == ("POST", "/sub", "q=1", "payload")
    assert echoed["headers"]["x-call-id"] == call_id and echoed["headers"]["user-agent"] == "faasgd-local/queue-worker"
    assert echoed["headers"]["content-type"] == "text/plain" and "x-callback-url" in echoed["headers"]
    assert (stats["accepted"], stats["delivered"], stats["in_flight"], stats["queued"]) == (1, 1, 0, 0)
    assert [(d["status"], d["callback_status"]) for d in gw.queue.deliveries(call_id)] == [(200, 200)]


async def test_async_rejects_unknown_function_bad_callback_big_body_and_get():
    async with gateway_in_process(FakeRegistry(echo=[FakeReplica("a")])) as gw:
        response = await gw.client.post("/async-function/nope", content=b"x")
        assert response.status_code == 404 and response.json()["error"] == "function not found: nope"
        for bad in ("ftp://host/x", "not a url", "http://", "http://[::1"):
            response = await gw.client.post("/async-function/echo", content=b"x", headers={"X-Callback-Url": bad})
            assert response.status_code == 400 and "X-Callback-Url" in response.json()["error"], bad
        response = await gw.client.post("/async-function/echo", content=b"x" * ((1 << 20) + 1))
        assert response.status_code == 413 and "request body" in response.json()["error"]
        response = await gw.client.get("/async-function/echo")
        assert response.status_code == 405 and response.headers["allow"] == "POST" and "error" in response.json()
        assert gw.queue.stats()["accepted"] == 0


async def test_a_finished_call_keeps_no_body():
    replica = FakeReplica("a")
    replica.hold = True
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        await gw.client.post("/async-function/echo", content=b"job-body", headers={"X-Callback-Url": gw.callbacks.url})
        await within(replica.arrived(1))
        assert gw.queue.stats()["held_bytes"] == len(b"job-body")
        replica.release()
        await within(gw.callbacks.next())
        assert gw.queue.stats()["held_bytes"] == 0


async def test_slow_call_is_redelivered_after_ack_wait_with_the_same_call_id():
    slow = FakeReplica("slow")
    slow.hold = True
    async with gateway_in_process(FakeRegistry(echo=[slow]), ack_wait_s=30, queue_workers=2, max_attempts=2) as gw:
        response = await gw.client.post("/async-function/echo", content=b"job",
                                        headers={"X-Callback-Url": gw.callbacks.url})
        call_id = response.headers["x-call-id"]
        await within(slow.arrived(1))
        await within(gw.clock.sleeping(30))
        await gw.clock.advance(30)
        await within(slow.arrived(2))
        assert [c["headers"]["x-call-id"] for c in slow.calls] == [call_id] * 2
        slow.release()
        callbacks = [await within(gw.callbacks.next()) for _ in range(2)]  # one per delivery, as CE posts them
        assert [headers["x-call-id"] for headers, _ in callbacks] == [call_id] * 2
        stats = gw.queue.stats()
        assert (stats["redelivered"], stats["delivered"], stats["failed"]) == (1, 2, 0)
        assert [d["kind"] for d in gw.queue.deliveries(call_id)] == ["first", "redelivery"]


async def test_call_failing_with_502_is_retried_until_a_replica_answers():
    dead, healthy = FakeReplica("dead"), FakeReplica("healthy")
    dead.dead = True
    registry = FakeRegistry(echo=[dead])
    async with gateway_in_process(registry, queue_workers=1) as gw:
        gw.transport.add(healthy)
        response = await gw.client.post("/async-function/echo", content=b"job",
                                        headers={"X-Callback-Url": gw.callbacks.url})
        await within(gw.clock.sleeping(RETRY_WAIT_S))
        registry.functions["echo"] = [healthy]
        await gw.clock.advance(RETRY_WAIT_S)
        got, _ = await within(gw.callbacks.next())
        call_id = response.headers["x-call-id"]
        assert got["x-function-status"] == "200" and got["x-call-id"] == call_id
        assert [d["status"] for d in gw.queue.deliveries(call_id)] == [502, 200]
        assert gw.queue.stats()["failed"] == 0 and healthy.calls[0]["headers"]["x-call-id"] == call_id


async def test_call_is_given_up_after_max_attempts_and_callback_reports_the_last_status():
    async with gateway_in_process(FakeRegistry(echo=[]), max_attempts=3) as gw:
        response = await gw.client.post("/async-function/echo", content=b"job",
                                        headers={"X-Callback-Url": gw.callbacks.url})
        for wait in (RETRY_WAIT_S, 2 * RETRY_WAIT_S):  # doubling backoff
            await within(gw.clock.sleeping(wait))
            await gw.clock.advance(wait)
        got, body = await within(gw.callbacks.next())
        stats, deliveries = gw.queue.stats(), gw.queue.deliveries(response.headers["x-call-id"])
    assert got["x-function-status"] == "502" and "no healthy replica" in body.decode()
    assert (stats["delivered"], stats["retried"], stats["failed"], stats["held_bytes"]) == (3, 2, 1, 0)
    assert [d["kind"] for d in deliveries] == ["first", "retry", "retry"]
    assert [d.get("retry_in_s") for d in deliveries] == [RETRY_WAIT_S, 2 * RETRY_WAIT_S, None]


async def test_function_errors_other_than_502_503_504_are_not_retried():
    replica = FakeReplica("a")
    replica.status = 500
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        await gw.client.post("/async-function/echo", content=b"job", headers={"X-Callback-Url": gw.callbacks.url})
        got, _ = await within(gw.callbacks.next())
        assert got["x-function-status"] == "500"
        assert (gw.queue.stats()["delivered"], gw.queue.stats()["retried"]) == (1, 0)


async def test_a_failing_callback_is_recorded_and_the_worker_goes_on():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica]), queue_workers=1) as gw:
        response = await gw.client.post("/async-function/echo", content=b"1",
                                        headers={"X-Callback-Url": "http://nowhere.test/cb"})
        await gw.client.post("/async-function/echo", content=b"2", headers={"X-Callback-Url": gw.callbacks.url})
        _, body = await within(gw.callbacks.next())
        assert b'"body": "2"' in body
        assert gw.queue.deliveries(response.headers["x-call-id"])[0]["callback_status"] is None


async def test_queue_workers_follow_total_replicas():
    registry = FakeRegistry(echo=[FakeReplica("a")])
    async with gateway_in_process(registry) as gw:
        assert gw.queue.stats()["workers"] == 1
        for total in (3, 2):
            registry.total = total
            await within(gw.clock.sleeping(RESIZE_S))
            await gw.clock.advance(RESIZE_S)
            await within(gw.clock.sleeping(RESIZE_S))  # the next round: this one is done
            assert gw.queue.stats()["workers"] == total
    async with gateway_in_process(registry, queue_workers=4) as gw:
        assert gw.queue.stats()["workers"] == 4

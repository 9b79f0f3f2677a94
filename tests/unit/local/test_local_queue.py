"""/async-function and the local queue-worker, in-process over a FakeBroker: acceptance, callbacks,
the two delivery modes (ce: redelivery after ack_wait, no retry, one call per queue worker; pro:
retries with capped backoff, several calls per queue worker), a restart of the queue's owner, and
the worker count. Time is a FakeClock the tests advance, so ack_wait and backoff take no time.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from faasgd.local.queue.rules import Chaos, DeliveryPolicy
from support.fake_replicas import FakeRegistry, FakeReplica
from support.local_gateway import gateway_in_process, within

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
RESIZE_S = 0.5  # queue.RESIZE_S
PRO = DeliveryPolicy("pro", max_attempts=4, retry_wait_s=0.3, max_retry_wait_s=0.9)  # waits 0.3, 0.6, 0.9: not 0.5


async def post(gw, body: bytes = b"job", path: str = "/async-function/echo") -> str:
    response = await gw.client.post(path, content=body, headers={"X-Callback-Url": gw.callbacks.url})
    assert response.status_code == 202, response.text
    return response.headers["x-call-id"]


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
    assert (stats["delivery"], stats["stored"]) == ("ce", 0)  # acked: nothing left in the broker
    assert [(d["status"], d["callback_status"]) for d in gw.queue.deliveries(call_id)] == [(200, 200)]


async def test_async_rejects_unknown_function_bad_callback_big_body_get_and_a_broker_error():
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
        gw.broker.refuse = "stream full"
        response = await gw.client.post("/async-function/echo", content=b"x")
        assert response.status_code == 503 and response.json()["error"] == "queue: stream full"
        assert response.headers["retry-after"] == "5" and response.headers["x-call-id"]
        assert gw.queue.stats()["accepted"] == 0 and not gw.broker.messages


async def test_a_call_resent_with_its_x_call_id_is_delivered_once():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        for _ in range(2):  # a client that got no answer (or a 503) sends the same call again
            response = await gw.client.post("/async-function/echo", content=b"job", headers={"X-Call-Id": "c-7"})
            assert response.status_code == 202 and response.headers["x-call-id"] == "c-7"
        await post(gw, b"another")
        await within(replica.arrived(2))
        assert sorted(call["body"] for call in replica.calls) == ["another", "job"]
        assert gw.queue.stats()["accepted"] == 3  # accepted each time; stored and delivered once


async def test_the_body_is_held_only_while_delivering_and_the_broker_keeps_it_until_the_ack():
    replica = FakeReplica("a")
    replica.hold = True
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        await post(gw, b"job-body")
        await within(replica.arrived(1))
        assert gw.queue.stats()["held_bytes"] == len(b"job-body") and len(gw.broker.messages) == 1
        replica.release()
        await within(gw.callbacks.next())
        assert (gw.queue.stats()["held_bytes"], gw.broker.messages) == (0, {})


async def test_ce_redelivers_a_slow_call_after_ack_wait_with_the_same_call_id():
    slow = FakeReplica("slow")
    slow.hold = True
    async with gateway_in_process(FakeRegistry(echo=[slow]), ack_wait_s=30, queue_workers=2) as gw:
        call_id = await post(gw)
        await within(slow.arrived(1))
        await within(gw.clock.sleeping(30))
        await gw.clock.advance(30)
        await within(slow.arrived(2))
        assert [c["headers"]["x-call-id"] for c in slow.calls] == [call_id] * 2
        slow.release()
        callbacks = [await within(gw.callbacks.next()) for _ in range(2)]  # one per delivery, as CE posts them
        assert [headers["x-call-id"] for headers, _ in callbacks] == [call_id] * 2
        stats = gw.queue.stats()
        assert (stats["redelivered"], stats["delivered"], stats["failed"], stats["stored"]) == (1, 2, 0, 0)
        assert [(d["kind"], d["attempt"]) for d in gw.queue.deliveries(call_id)] == [("first", 1), ("redelivery", 2)]


@pytest.mark.parametrize("status", [502, 503, 500, 429])
async def test_ce_does_not_retry_a_failed_call_and_the_callback_reports_it(status):
    replica = FakeReplica("a")
    replica.status = status
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        call_id = await post(gw)
        got, _ = await within(gw.callbacks.next())
        await gw.clock.advance(3600)  # no retry, no redelivery, however long one waits
        stats = gw.queue.stats()
    assert got["x-function-status"] == str(status) and len(replica.calls) == 1
    assert (stats["delivered"], stats["retried"], stats["failed"], stats["stored"]) == (1, 0, 1, 0)
    assert [d["kind"] for d in gw.queue.deliveries(call_id)] == ["first"]


async def test_ce_reports_a_refused_connection_with_its_502_and_keeps_one_call_per_queue_worker():
    dead, held = FakeReplica("dead"), FakeReplica("held")
    dead.dead, held.hold = True, True
    async with gateway_in_process(FakeRegistry(echo=[dead], slow=[held]), queue_workers=1) as gw:
        await post(gw, path="/async-function/echo")
        got, body = await within(gw.callbacks.next())
        assert got["x-function-status"] == "502" and b"cannot reach function echo" in body
        for _ in range(3):
            await post(gw, path="/async-function/slow")
        await within(held.arrived(1))
        await gw.clock.advance(RESIZE_S)
        stats = gw.queue.stats()
        assert (len(held.calls), stats["in_flight"], stats["queued"], stats["capacity"]) == (1, 1, 2, 1)
        held.release()
        for _ in range(3):
            await within(gw.callbacks.next())


async def test_pro_retries_a_503_with_backoff_until_the_replica_answers():
    replica = FakeReplica("a")
    replica.status = 503
    async with gateway_in_process(FakeRegistry(echo=[replica]), delivery=PRO) as gw:
        call_id = await post(gw)
        for wait in (0.3, 0.6):
            await within(gw.clock.sleeping(wait))
            if wait == 0.6:
                replica.status = 200
            await gw.clock.advance(wait)
        got, _ = await within(gw.callbacks.next())
        deliveries, stats = gw.queue.deliveries(call_id), gw.queue.stats()
    assert got["x-function-status"] == "200" and got["x-call-id"] == call_id and len(gw.callbacks.received) == 1
    assert [(d["kind"], d["status"], d.get("retry_in_s")) for d in deliveries] == \
        [("first", 503, 0.3), ("retry", 503, 0.6), ("retry", 200, None)]
    assert (stats["delivery"], stats["retried"], stats["failed"], stats["stored"]) == ("pro", 2, 0, 0)


async def test_pro_gives_up_after_max_attempts_with_capped_waits_and_reports_the_last_status():
    async with gateway_in_process(FakeRegistry(echo=[]), delivery=PRO) as gw:
        call_id = await post(gw)
        for wait in (0.3, 0.6, 0.9):  # doubling, capped at max_retry_wait_s
            await within(gw.clock.sleeping(wait))
            await gw.clock.advance(wait)
        got, body = await within(gw.callbacks.next())
        stats, deliveries = gw.queue.stats(), gw.queue.deliveries(call_id)
    assert got["x-function-status"] == "502" and "no healthy replica" in body.decode()
    assert (stats["delivered"], stats["retried"], stats["failed"], stats["held_bytes"], stats["stored"]) == \
        (4, 3, 1, 0, 0)
    assert [(d["attempt"], d.get("retry_in_s")) for d in deliveries] == [(1, 0.3), (2, 0.6), (3, 0.9), (4, None)]


@pytest.mark.parametrize("status", [200, 400, 404, 501])
async def test_pro_does_not_retry_statuses_outside_its_retry_codes(status):
    replica = FakeReplica("a")
    replica.status = status
    async with gateway_in_process(FakeRegistry(echo=[replica]), delivery=PRO) as gw:
        await post(gw)
        got, _ = await within(gw.callbacks.next())
        assert got["x-function-status"] == str(status)
        assert (gw.queue.stats()["delivered"], gw.queue.stats()["retried"], len(replica.calls)) == (1, 0, 1)


async def test_pro_runs_several_calls_per_queue_worker():
    held = FakeReplica("held")
    held.hold = True
    policy = DeliveryPolicy("pro", max_inflight=3)
    async with gateway_in_process(FakeRegistry(echo=[held]), delivery=policy, queue_workers=1) as gw:
        for _ in range(4):
            await post(gw)
        await within(held.arrived(3))
        assert (gw.queue.stats()["in_flight"], gw.queue.stats()["capacity"], len(held.calls)) == (3, 3, 3)
        held.release()
        for _ in range(4):
            await within(gw.callbacks.next())


async def test_a_new_owner_delivers_what_the_old_one_left_queued_and_in_flight():
    held = FakeReplica("held")
    held.hold = True
    registry = FakeRegistry(echo=[held])
    async with gateway_in_process(registry, queue_workers=1) as old:
        ids = [await post(old, f"call {i}".encode()) for i in range(3)]
        await within(held.arrived(1))  # one in flight, two queued, when the owner goes
    broker, clock, callbacks = old.broker, old.clock, old.callbacks
    assert len(broker.messages) == 3
    held.release()
    async with gateway_in_process(registry, broker=broker, clock=clock, callbacks=callbacks, queue_workers=1) as new:
        got = [await within(new.callbacks.next()) for _ in range(3)]
        assert sorted(headers["x-call-id"] for headers, _ in got) == sorted(ids)
        assert [headers["x-function-status"] for headers, _ in got] == ["200"] * 3
        assert (broker.opened, broker.messages, new.queue.deliveries(ids[0])[0]["kind"]) == (2, {}, "first")


async def test_a_failing_callback_is_recorded_and_the_worker_goes_on():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica]), queue_workers=1) as gw:
        response = await gw.client.post("/async-function/echo", content=b"1",
                                        headers={"X-Callback-Url": "http://nowhere.test/cb"})
        await gw.client.post("/async-function/echo", content=b"2", headers={"X-Callback-Url": gw.callbacks.url})
        _, body = await within(gw.callbacks.next())
        assert b'"body": "2"' in body
        assert gw.queue.deliveries(response.headers["x-call-id"])[0]["callback_status"] is None


async def test_queue_workers_follow_the_replicas_call_slots():
    registry = FakeRegistry(echo=[FakeReplica("a")])
    async with gateway_in_process(registry) as gw:
        assert gw.queue.stats()["workers"] == 1
        for total in (3, 2):
            registry.total = total
            await within(gw.clock.sleeping(RESIZE_S))
            await gw.clock.advance(RESIZE_S)
            await within(gw.clock.sleeping(RESIZE_S))  # the next round: this one is done
            assert gw.queue.stats()["workers"] == total
    async with gateway_in_process(registry, queue_workers=4, delivery=DeliveryPolicy("pro", max_inflight=2)) as gw:
        assert (gw.queue.stats()["workers"], gw.queue.stats()["capacity"]) == (4, 8)


async def test_chaos_drops_the_first_deliveries_unsent_and_ce_ends_those_calls_with_502():
    replica = FakeReplica("a")
    policy = DeliveryPolicy(chaos=Chaos(drop=(("echo", 2),)))
    async with gateway_in_process(FakeRegistry(echo=[replica]), delivery=policy) as gw:
        statuses = []
        for _ in range(3):
            await post(gw)
            got, _ = await within(gw.callbacks.next())
            statuses.append(got["x-function-status"])
        stats = gw.queue.stats()
    assert statuses == ["502", "502", "200"] and len(replica.calls) == 1  # the dropped two never reached it
    assert (stats["dropped"], stats["failed"], stats["stored"]) == (2, 2, 0)


async def test_chaos_duplicate_delivers_a_call_twice_at_once_with_one_call_id_and_one_callback():
    replica = FakeReplica("a")
    replica.hold = True
    policy = DeliveryPolicy(chaos=Chaos(duplicate=frozenset({"echo"})))
    async with gateway_in_process(FakeRegistry(echo=[replica]), delivery=policy) as gw:
        call_id = await post(gw)
        await within(replica.arrived(2))  # both copies are in the function before either answers
        replica.release()
        got, _ = await within(gw.callbacks.next())
        for _ in range(100):  # the copy's answer may land just after the callback
            if all(d["status"] for d in gw.queue.deliveries(call_id)):
                break
            await asyncio.sleep(0.01)
        kinds = sorted((d["kind"], d["status"]) for d in gw.queue.deliveries(call_id))
        assert gw.queue.stats()["duplicated"] == 1
    assert got["x-call-id"] == call_id and {c["headers"]["x-call-id"] for c in replica.calls} == {call_id}
    assert kinds == [("duplicate", 200), ("first", 200)]


async def test_a_broker_timing_out_at_the_ack_and_the_count_leaves_the_call_stored_and_the_queue_going():
    """A JetStream request that times out (a full disk, a broker restarted with requests in flight) at the ack and
    at the stored count: the call's answer is still called back, the unacked message comes again once the broker
    answers and is settled without a second delivery, and the loop that follows the worker count lives on."""
    replica = FakeReplica("a")
    registry = FakeRegistry(echo=[replica])
    async with gateway_in_process(registry, ack_wait_s=30) as gw:
        gw.broker.timing_out = "disk full"
        call_id = await post(gw)
        got, _ = await within(gw.callbacks.next())
        assert got["x-call-id"] == call_id and got["x-function-status"] == "200"
        assert len(gw.broker.messages) == 1  # the ack timed out: the broker keeps the call
        registry.total = 3
        for _ in range(2):  # two rounds of the worker count, each meeting a stored() that times out
            await within(gw.clock.sleeping(RESIZE_S))
            await gw.clock.advance(RESIZE_S)
        await within(gw.clock.sleeping(RESIZE_S))
        assert gw.queue.stats()["workers"] == 3
        gw.broker.timing_out = None
        await gw.clock.advance(30)  # ack_wait: the broker hands the unacked call out again
        await within(gw.clock.sleeping(RESIZE_S))
        for _ in range(100):
            if not gw.broker.messages:
                break
            await asyncio.sleep(0.01)
        assert gw.broker.messages == {} and len(replica.calls) == 1  # settled, not delivered twice
        registry.total = 2
        await gw.clock.advance(RESIZE_S)
        await within(gw.clock.sleeping(RESIZE_S))
        assert gw.queue.stats()["workers"] == 2 and gw.queue.stats()["stored"] == 0


async def test_a_round_of_the_worker_count_that_fails_unforeseen_is_logged_and_the_next_one_comes(caplog):
    registry = FakeRegistry(echo=[FakeReplica("a")])
    async with gateway_in_process(registry) as gw:
        stored = gw.broker.stored

        async def broken() -> int:
            raise RuntimeError("a bug in the broker's client")
        gw.broker.stored = broken
        await within(gw.clock.sleeping(RESIZE_S))
        await gw.clock.advance(RESIZE_S)
        await within(gw.clock.sleeping(RESIZE_S))
        assert "a round of the queue-worker count failed" in caplog.text
        gw.broker.stored, registry.total = stored, 3
        await gw.clock.advance(RESIZE_S)
        await within(gw.clock.sleeping(RESIZE_S))
        assert gw.queue.stats()["workers"] == 3


async def test_chaos_slow_adds_its_header_to_every_delivery_of_the_function_only():
    slowed, other = FakeReplica("a"), FakeReplica("b")
    policy = DeliveryPolicy(chaos=Chaos(slow=(("echo", "4:1"),)))
    async with gateway_in_process(FakeRegistry(echo=[slowed], other=[other]), delivery=policy) as gw:
        for path in ("/async-function/echo", "/async-function/echo", "/async-function/other"):
            await post(gw, path=path)
            await within(gw.callbacks.next())
        stats = gw.queue.stats()
    assert [c["headers"].get("x-chaos-slow") for c in slowed.calls] == ["4:1", "4:1"]
    assert "x-chaos-slow" not in other.calls[0]["headers"] and stats["slowed"] == 2

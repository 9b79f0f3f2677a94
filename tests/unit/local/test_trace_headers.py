"""The local gateway carries W3C trace context: sync proxying, the async queue (the call's headers kept in the
broker's message and sent on delivery) and the X-Callback-Url callback."""

from __future__ import annotations

import pytest

from support.fake_replicas import FakeRegistry, FakeReplica
from support.local_gateway import gateway_in_process, within

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
TRACE = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "faasgd=1"}


async def test_a_sync_call_reaches_the_replica_with_its_trace_context():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        response = await gw.client.post("/function/echo", content=b"x", headers=TRACE)
    assert response.status_code == 200
    got = replica.calls[0]["headers"]
    assert {k: got[k] for k in TRACE} == TRACE


async def test_a_queued_call_is_delivered_and_called_back_with_its_trace_context():
    replica = FakeReplica("a")
    async with gateway_in_process(FakeRegistry(echo=[replica])) as gw:
        response = await gw.client.post("/async-function/echo", content=b"x",
                                        headers={**TRACE, "X-Callback-Url": gw.callbacks.url})
        assert response.status_code == 202
        callback, _ = await within(gw.callbacks.next())
    delivered = replica.calls[0]["headers"]
    assert {k: delivered[k] for k in TRACE} == TRACE
    assert {k: callback[k] for k in TRACE} == TRACE  # the callback belongs to the same trace

"""The broker contract (support/broker_contract.py) over the FakeBroker the in-process tests use, so
the fake keeps JetStream's semantics; tests/integration/test_queue_jetstream.py runs it on nats-server."""

from __future__ import annotations

import asyncio

import pytest

from faasgd.local.services.broker import DEFAULT_MAX_PAYLOAD
from support.broker_contract import CHECKS
from support.fake_broker import FakeBroker
from support.fake_clock import FakeClock

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


class FakeHarness:
    max_payload = DEFAULT_MAX_PAYLOAD

    def __init__(self):
        self.clock = FakeClock()
        self.store: FakeBroker | None = None

    def make(self) -> FakeBroker:
        """A broker over the same messages (a new owner of the same stream)."""
        broker = FakeBroker(self.clock)
        if self.store is not None:
            broker.messages, broker._seqs = self.store.messages, self.store._seqs
        self.store = broker
        return broker

    async def elapse(self, seconds: float) -> None:
        for _ in range(5):  # let timers just started register, then the woken ones hand their messages out
            await asyncio.sleep(0)
        await self.clock.advance(seconds)
        for _ in range(5):
            await asyncio.sleep(0)


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
async def test_fake_broker_keeps_the_contract(check):
    await check(FakeHarness())

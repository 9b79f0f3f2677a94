"""The local gateway in-process for unit tests: its ASGI app behind httpx.ASGITransport, fake
replicas and a callback recorder behind a RoutingTransport, a FakeBroker for its queue, and a
FakeClock. No socket, no thread of ours, no sleep."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from faasgd.local.gateway import GatewayOptions, Registry, create_app
from support.fake_broker import FakeBroker
from support.fake_clock import FakeClock
from support.fake_replicas import CallbackRecorder, FakeRegistry, RoutingTransport

WAIT_S = 5.0  # how long a test waits for something that should happen at once before it fails


@dataclass
class InProcessGateway:
    app: object
    client: httpx.AsyncClient  # requests go to the app, in-process
    clock: FakeClock
    transport: RoutingTransport  # add() more fake replicas to it
    callbacks: CallbackRecorder  # its url is a valid X-Callback-Url
    broker: FakeBroker  # what the queue keeps

    @property
    def queue(self):
        return self.app.state.queue


@asynccontextmanager
async def gateway_in_process(registry: FakeRegistry | Registry, broker: FakeBroker | None = None,
                             clock: FakeClock | None = None, callbacks: CallbackRecorder | None = None, **options):
    """A started gateway app over `registry` (lifespan run, so its queue-workers are up).

    Pass the `broker`, `clock` and `callbacks` of an earlier gateway to play a restart of the runtime.
    """
    clock, callbacks = clock or FakeClock(), callbacks or CallbackRecorder()
    broker = broker or FakeBroker(clock)
    replicas = getattr(registry, "functions", {})  # a FakeRegistry's; a real Supervisor's pods add their own
    transport = RoutingTransport(*[r for rs in replicas.values() for r in rs], callbacks)
    app = create_app(registry, GatewayOptions(**options), transport=transport, clock=clock, broker=broker)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://gateway.test") as client:
            yield InProcessGateway(app, client, clock, transport, callbacks, broker)


async def within(awaitable, seconds: float = WAIT_S):
    """Await something that should happen at once; fail the test if it has not after `seconds`."""
    return await asyncio.wait_for(awaitable, seconds)

"""Clocks that move only when a test says so, so no test waits on real time.

- `StepClock` for synchronous code that takes `clock` and `sleep` (retries, leases, polls, TTLs):
  calling it reads the time; `sleep(s)` records the wait and moves the time on at once.
- `FakeClock` for the gateway (faasgd.local.clock.Clock): `sleep` and `timeout` register
  timers; `advance` fires the ones due; `sleeping(seconds)` waits until some task is waiting on a
  timer of exactly that length, so a test knows when to advance.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Callable


class StepClock:
    def __init__(self, start: float = 1000.0):
        self.now = start
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.waits.append(seconds)
        self.now += seconds


@dataclass(eq=False)
class _Timer:
    deadline: float
    seconds: float
    fire: Callable[[], None]


class FakeClock:
    def __init__(self, start: float = 1000.0):
        self._now = start
        self._timers: list[_Timer] = []
        self._added: asyncio.Event | None = None

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        woken = asyncio.get_running_loop().create_future()
        timer = self._add(seconds, lambda: woken.done() or woken.set_result(None))
        try:
            await woken
        finally:
            self._discard(timer)

    @asynccontextmanager
    async def timeout(self, seconds: float):
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(None) as expiry:
            timer = self._add(seconds, lambda: expiry.reschedule(loop.time()))
            try:
                yield
            finally:
                self._discard(timer)

    async def advance(self, seconds: float) -> None:
        """Move time on and fire the timers due; the woken tasks run at the caller's next await."""
        self._now += seconds
        for timer in [t for t in self._timers if t.deadline <= self._now]:
            self._discard(timer)
            timer.fire()
        await asyncio.sleep(0)

    async def sleeping(self, seconds: float) -> None:
        """Wait until a task sleeps, or waits under a timeout, of exactly `seconds`."""
        while not any(t.seconds == seconds for t in self._timers):
            if self._added is None or self._added.is_set():
                self._added = asyncio.Event()
            await self._added.wait()

    def _add(self, seconds: float, fire: Callable[[], None]) -> _Timer:
        timer = _Timer(self._now + seconds, seconds, fire)
        self._timers.append(timer)
        if self._added is not None:
            self._added.set()
        return timer

    def _discard(self, timer: _Timer) -> None:
        if timer in self._timers:
            self._timers.remove(timer)

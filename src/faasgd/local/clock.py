"""The clock the gateway and its queue keep time with: monotonic time, sleeps and timeouts on the event loop.

Tests inject one they advance by hand (tests/support/fake_clock.py's FakeClock); the runtime uses RealClock.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager
from typing import Protocol


class Clock(Protocol):
    """Monotonic time for deadlines, backoff and ack_wait; tests inject one they advance by hand."""

    def now(self) -> float: ...
    async def sleep(self, seconds: float) -> None: ...
    def timeout(self, seconds: float) -> AbstractAsyncContextManager: ...  # raises TimeoutError on expiry


class RealClock:
    """The event loop's own time."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def timeout(self, seconds: float) -> AbstractAsyncContextManager:
        return asyncio.timeout(seconds)

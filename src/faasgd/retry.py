"""Retrying store calls across outages: bounded by a deadline, sleeping with jittered backoff."""

from __future__ import annotations

import random
import time
from typing import Callable, TypeVar

from faasgd.errors import StoreTimeout, StoreUnavailable

T = TypeVar("T")

TRANSIENT = (StoreUnavailable, StoreTimeout)


def with_retry(
    call: Callable[[], T],
    deadline_s: float,
    *,
    first_sleep_s: float = 0.05,
    max_sleep_s: float = 2.0,
    on_retry: Callable[[Exception], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run `call`; on a transient store error retry until `deadline_s` has passed, then re-raise it."""
    give_up_at = clock() + deadline_s
    pause = first_sleep_s
    while True:
        try:
            return call()
        except TRANSIENT as error:
            remaining = give_up_at - clock()
            if remaining <= 0:
                raise
            if on_retry is not None:
                on_retry(error)
            sleep(min(remaining, pause * (0.5 + random.random())))
            pause = min(max_sleep_s, pause * 2)

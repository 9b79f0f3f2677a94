"""A worker's store round trips, whatever its kind: each retried across an outage, each retry counted.

StoreCalls is a mixin of both trainers (faasgd.downpour's and faasgd.lambdaml's), which provide config and
progress; the synchronous one sets `_last_push_at` at each round's end (Downpour's worker reads its exchange's instead).
"""

from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

from faasgd.retry import STORE_OUTAGE, retry_call

T = TypeVar("T")


class StoreCalls:
    sleep = staticmethod(time.sleep)  # how store retries wait (tests replace both with a fake clock)
    clock = staticmethod(time.monotonic)
    _last_push_at: float | None = None  # when this call's last checkpoint landed (None: none yet)
    _count_lock = threading.Lock()  # a Downpour worker's store thread retries too

    def retry(self, call: Callable[[], T]) -> T:
        """`call()`, retried across a store outage up to store_timeout_s; each retry counted in the record."""
        def count(_error):
            with self._count_lock:
                self.progress.retries += 1
        return retry_call(call, STORE_OUTAGE.within(self.config.store_timeout_s), on_retry=count,
                          sleep=self.sleep, clock=self.clock)

    @property
    def has_pushed(self) -> bool:
        """This call has checkpointed progress (a push landed, a round ended): from then on it may hand off."""
        return self._last_push_at is not None

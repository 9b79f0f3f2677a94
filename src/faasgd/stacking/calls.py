"""The driver's calls of the other three functions, made again where that is safe.

Every call is idempotent: a trainer writes its model and predictions under its own names, computed from
the job's dataset and seed alone (the reducer's and the metatrainer's objects likewise), so a second run
writes the same bytes. A call whose answer was lost — the gateway unreachable or timing out, or answering
502/503/504 because the replica died or was not ready — is therefore made again, at most
records.CALL_ATTEMPTS times in all. A function's own error (a 4xx, a 500 with its message) is an answer,
never retried: a tampered object must fail the job at once.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from faasgd.errors import FaasgdError, GatewayError
from faasgd.openfaas import FunctionError
from faasgd.retry import RetryPolicy, retry_call
from faasgd.stacking.records import CALL_ATTEMPTS

Call = Callable[[str, dict], dict]  # (function, JSON body) -> its JSON answer; raises FaasgdError
LOST_STATUSES = (502, 503, 504)  # the gateway's answers when the call, not the function, failed


class _Lost(FaasgdError):
    def __init__(self, error: FunctionError):
        self.error = error
        super().__init__(str(error))


class Retrying:
    """`call` made again on a lost answer; `retries` counts the calls made again (thread-safe)."""

    def __init__(self, call: Call, call_timeout_s: float, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self.call, self.sleep, self.clock = call, sleep, clock
        self.policy = RetryPolicy(deadline_s=CALL_ATTEMPTS * call_timeout_s, first_wait_s=0.25, max_wait_s=4.0,
                                  max_attempts=CALL_ATTEMPTS)
        self.retries = 0
        self._lock = threading.Lock()

    def _count(self, _error: BaseException) -> None:
        with self._lock:
            self.retries += 1

    def _attempt(self, function: str, payload: dict) -> dict:
        try:
            return self.call(function, payload)
        except FunctionError as error:
            if error.http_status in LOST_STATUSES:
                raise _Lost(error) from error
            raise

    def __call__(self, function: str, payload: dict) -> dict:
        try:
            return retry_call(lambda: self._attempt(function, payload), self.policy, retry_on=(_Lost, GatewayError),
                              on_retry=self._count, sleep=self.sleep, clock=self.clock)
        except _Lost as lost:
            raise lost.error from None

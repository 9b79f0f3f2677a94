"""The one retry policy of the core, on tenacity: bounded by a deadline and a count, jittered backoff.

Three uses, one mechanism:
  * store outages: a worker retries a store call that failed transiently (StoreUnavailable,
    StoreTimeout) until the job's `store_timeout_s` has passed (STORE_OUTAGE);
  * lost races: a push whose optimistic write lost against another writer is redone, a bounded
    number of times within a bounded time (PUSH_CONFLICT; the store raises StoreConflict past it);
  * gateway calls that chain or re-invoke a worker (GATEWAY_CALL; past it, supervision takes over).
Waits follow tenacity's "full jitter" exponential backoff (random in [0, min(max, first * 2^n)])
and never run past the deadline. Clock and sleep are injectable so tests need no real time.
(redis-py's own Retry reconnects a dropped connection once; that stays inside the client.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

import tenacity

from faasgd.errors import StoreTimeout, StoreUnavailable

T = TypeVar("T")

TRANSIENT = (StoreUnavailable, StoreTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often to retry, and how long to wait in between."""

    deadline_s: float  # no attempt starts after this many seconds from the first
    first_wait_s: float  # the backoff's base: the n-th wait is at most first_wait_s * 2^(n-1)
    max_wait_s: float  # ... and never more than this
    max_attempts: int | None = None  # attempts in all, the first included (None: only the deadline)

    def within(self, deadline_s: float) -> "RetryPolicy":
        """The same policy with another deadline."""
        return replace(self, deadline_s=deadline_s)


STORE_OUTAGE = RetryPolicy(deadline_s=30.0, first_wait_s=0.05, max_wait_s=2.0)
PUSH_CONFLICT = RetryPolicy(deadline_s=30.0, first_wait_s=0.0005, max_wait_s=0.05, max_attempts=201)
GATEWAY_CALL = RetryPolicy(deadline_s=20.0, first_wait_s=0.25, max_wait_s=4.0)  # a chain or re-invocation


def retry_call(
    call: Callable[[], T],
    policy: RetryPolicy,
    retry_on: tuple[type[BaseException], ...] = TRANSIENT,
    *,
    on_retry: Callable[[BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run `call`; on an exception of `retry_on` wait and run it again until the policy gives up,
    then re-raise the last exception. `on_retry(error)` is called before each wait.

    The first attempt runs outside tenacity, whose machinery (~20 µs a call) is built only once it has failed: a
    worker's push goes through two of these calls, and nearly every call succeeds at once. From the first failure
    on, tenacity runs the rest, its attempts numbered from 2, so the waits and bounds are as if it had run them all.
    """
    give_up_at = clock() + policy.deadline_s
    try:
        return call()
    except retry_on as error:
        first = error
    backoff = tenacity.wait_random_exponential(multiplier=policy.first_wait_s, max=policy.max_wait_s)

    def stop(state: tenacity.RetryCallState) -> bool:
        out_of_attempts = policy.max_attempts is not None and state.attempt_number + 1 >= policy.max_attempts
        return out_of_attempts or clock() >= give_up_at

    def wait(state: tenacity.RetryCallState) -> float:
        return max(0.0, min(give_up_at - clock(), backoff(AttemptNumber(state.attempt_number + 1))))

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry is not None:
            on_retry(state.outcome.exception())

    if (policy.max_attempts is not None and policy.max_attempts <= 1) or clock() >= give_up_at:
        raise first
    if on_retry is not None:
        on_retry(first)
    sleep(max(0.0, min(give_up_at - clock(), backoff(AttemptNumber(1)))))
    retrying = tenacity.Retrying(stop=stop, wait=wait, retry=tenacity.retry_if_exception_type(retry_on),
                                 before_sleep=before_sleep, sleep=sleep, reraise=True)
    return retrying(call)


@dataclass(frozen=True)
class AttemptNumber:
    """What tenacity's wait functions read of a call's state: the number of the attempt that just failed."""

    attempt_number: int

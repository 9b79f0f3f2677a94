"""The one retry policy (faasgd.retry on tenacity), driven by a fake clock: no real waiting."""

import pytest

from faasgd.errors import StoreConflict, StoreTimeout, StoreUnavailable
from faasgd.retry import PUSH_CONFLICT, STORE_OUTAGE, RetryPolicy, retry_call
from support.fake_clock import StepClock


def test_retries_transient_errors_until_success():
    clock = StepClock()
    calls = []

    def flaky():
        calls.append(clock.now)
        if len(calls) < 4:
            raise StoreUnavailable("redis://h:1/0", "refused")
        return "ok"

    seen = []
    assert retry_call(flaky, STORE_OUTAGE.within(10), sleep=clock.sleep, clock=clock, on_retry=seen.append) == "ok"
    assert len(calls) == 4 and len(seen) == 3 and all(isinstance(e, StoreUnavailable) for e in seen)
    assert calls == sorted(calls)


def test_gives_up_at_the_deadline_with_the_last_error_and_never_waits_past_it():
    clock = StepClock()

    def down():
        raise StoreTimeout("memcached://h:2", "timed out")

    with pytest.raises(StoreTimeout):
        retry_call(down, STORE_OUTAGE.within(5), sleep=clock.sleep, clock=clock)
    assert clock.now == pytest.approx(1005.0)
    assert max(clock.waits) <= STORE_OUTAGE.max_wait_s


def test_waits_grow_exponentially_under_the_cap():
    clock = StepClock()
    policy = RetryPolicy(deadline_s=1000, first_wait_s=1.0, max_wait_s=8.0, max_attempts=12)
    with pytest.raises(StoreUnavailable):
        retry_call(lambda: (_ for _ in ()).throw(StoreUnavailable("u", "x")), policy, sleep=clock.sleep, clock=clock)
    assert len(clock.waits) == 11  # 12 attempts, 11 waits between them
    for n, wait in enumerate(clock.waits, start=1):
        assert 0 <= wait <= min(8.0, 2 ** (n - 1))  # full jitter


def test_attempts_are_bounded_by_count_too():
    clock, calls = StepClock(), []

    def lost():
        calls.append(1)
        raise StoreConflict("redis://h:1/0", "lost the race")

    with pytest.raises(StoreConflict):
        retry_call(lost, PUSH_CONFLICT.within(1e9), (StoreConflict,), sleep=clock.sleep, clock=clock)
    assert len(calls) == PUSH_CONFLICT.max_attempts


def test_other_errors_are_not_retried():
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("bug")

    with pytest.raises(ValueError):
        retry_call(broken, STORE_OUTAGE.within(10))
    assert calls == [1]

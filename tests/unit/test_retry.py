import pytest

from faasgd.errors import StoreTimeout, StoreUnavailable
from faasgd.retry import with_retry


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.now += seconds


def test_retries_transient_errors_until_success():
    clock = FakeClock()
    calls = []

    def flaky():
        calls.append(clock.now)
        if len(calls) < 4:
            raise StoreUnavailable("redis://h:1/0", "refused")
        return "ok"

    seen = []
    assert with_retry(flaky, 10, sleep=clock.sleep, clock=clock, on_retry=seen.append) == "ok"
    assert len(calls) == 4 and len(seen) == 3
    assert calls == sorted(calls) and calls[-1] > 0


def test_gives_up_after_the_deadline_with_the_last_error():
    clock = FakeClock()

    def down():
        raise StoreTimeout("memcached://h:2", "timed out")

    with pytest.raises(StoreTimeout):
        with_retry(down, 5, sleep=clock.sleep, clock=clock)
    assert 5 <= clock.now < 5 + 2.5


def test_other_errors_are_not_retried():
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("bug")

    with pytest.raises(ValueError):
        with_retry(broken, 10)
    assert calls == [1]

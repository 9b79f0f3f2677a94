"""A call's clock: the store's reading paired with the midpoint of its round trip, and the stamps' stated error."""

from __future__ import annotations

import pytest

from faasgd.worker.call_clock import CallClock


class Ticks:
    """A monotonic clock the test moves by hand; each read can move it on by a set step first."""

    def __init__(self, start: float = 100.0):
        self.value, self.steps = start, []

    def __call__(self) -> float:
        if self.steps:
            self.value += self.steps.pop(0)
        return self.value


class SlowStore:
    """A store whose clock reads `server_now` at the request, the reply then arriving `delay_s` later."""

    def __init__(self, ticks: Ticks, server_now: float, request_s: float, delay_s: float):
        self.ticks, self.server_now, self.request_s, self.delay_s = ticks, server_now, request_s, delay_s

    def job_time(self) -> float:
        self.ticks.value += self.request_s  # the request's way to the server, which reads its clock then
        reading = self.server_now
        self.ticks.value += self.delay_s  # the reply's way back, and the wait for this thread to run again
        return reading


def test_stamps_sit_at_the_midpoint_of_the_reading_and_state_half_the_round_trip_as_their_error():
    ticks = Ticks()
    clock = CallClock.begin(monotonic=ticks)  # entry at monotonic 100.0
    ticks.value += 0.010  # 10 ms of work before the first store call
    # the server reads 5000.0 when 1 ms of the request has passed; the reply then takes 9 ms to be seen
    clock.anchor(SlowStore(ticks, server_now=5000.0, request_s=0.001, delay_s=0.009))
    assert clock.error_s == pytest.approx(0.005)
    true_entry = 5000.0 - 0.010 - 0.001  # the server's time at the call's entry
    assert abs(clock.started_at() - true_entry) <= clock.error_s
    # pairing the reading with the reply's arrival would place the entry 9 ms early: outside the stated error
    assert abs((5000.0 - (100.020 - 100.0)) - true_entry) > clock.error_s


def test_the_timeline_is_read_once_and_moves_on_by_the_monotonic_clock():
    ticks = Ticks()
    clock = CallClock.begin(monotonic=ticks)
    store = SlowStore(ticks, server_now=7000.0, request_s=0.0, delay_s=0.0)
    clock.anchor(store)
    store.server_now = 9999.0  # a second anchor reads nothing
    clock.anchor(store)
    ticks.value += 2.5
    assert clock.now() == pytest.approx(7002.5) and clock.error_s == 0.0
    assert clock.elapsed() == pytest.approx(2.5)

"""A replica's life behind of-watchdog (faasgd.functions.replica_life): durations, call deadlines, readiness and
draining, on an injected clock; no socket, no subprocess, no sleep."""

from __future__ import annotations

import threading

import pytest

from faasgd.functions.replica_life import (ANSWER_MARGIN_S, HANDLER_MARGIN_S, ReplicaLife, call_limit,
                                           go_seconds, listening_address)
from support.fake_clock import StepClock


@pytest.mark.parametrize("text, seconds", [
    ("30", 30.0), ("0", 0.0), ("30s", 30.0), ("1m5s", 65.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("2h45m", 9900.0),
    ("500ms", 0.5), ("300us", 3e-4), ("300µs", 3e-4), ("10ns", 1e-8), ("1h0m0.5s", 3600.5), (".5s", 0.5),
    (" 600s ", 600.0),
])
def test_go_durations_and_plain_seconds_are_read_as_the_watchdog_reads_them(text, seconds):
    assert go_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "1x", "s", "1.5", "-1s", "1 m", "1m5", "ten seconds", "1:30", "1d"])
def test_anything_else_is_the_default(text):
    assert go_seconds(text, 7.0) == 7.0 and go_seconds(text, None) is None


def test_a_calls_limit_is_the_least_of_the_watchdogs_timeouts_and_an_x_timeout_it_accepts():
    env = {"exec_timeout": "60s", "write_timeout": "1m30s"}
    assert call_limit({}, env) == 60.0
    assert call_limit({}, {}) == 30.0  # the watchdog's defaults
    assert call_limit({"X-Timeout": "2s"}, env) == 2.0
    assert call_limit({"X-Timeout": "2m"}, env) == 60.0  # above exec_timeout: ignored, as the watchdog does
    assert call_limit({"X-Timeout": "5"}, env) == 60.0  # only Go durations are taken there
    assert call_limit({"X-Timeout": "soon"}, env) == 60.0


def test_a_call_is_answered_ahead_of_its_limit_and_its_handler_told_earlier_still():
    clock = StepClock(100.0)
    times = ReplicaLife({"exec_timeout": "3s"}, clock=clock).deadlines({})
    assert times.limit_s == 3.0
    assert times.answer_by == pytest.approx(103.0 - ANSWER_MARGIN_S)
    assert times.handler_by == pytest.approx(times.answer_by - HANDLER_MARGIN_S)


def test_a_handler_that_ends_in_time_hands_back_its_result_or_its_error():
    clock = StepClock()
    replica = ReplicaLife({}, clock=clock)
    assert replica.run(lambda: {"statusCode": 200}, clock() + 10).result == {"statusCode": 200}
    failed = replica.run(lambda: 1 / 0, clock() + 10)
    assert isinstance(failed.error, ZeroDivisionError) and not failed.late
    assert replica.running == 0


def test_a_handler_still_running_at_the_answer_is_late_and_counted_until_it_ends():
    clock = StepClock()
    replica = ReplicaLife({}, clock=clock)
    release, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)
        return "late result"

    outcome = replica.run(slow, clock())  # the answer is due now
    assert started.wait(10) and outcome.late and outcome.result is None
    assert replica.running == 1
    release.set()
    for _ in range(1000):
        if replica.running == 0:
            break
        threading.Event().wait(0.01)
    assert replica.running == 0


def test_readiness_starts_off_comes_with_the_lock_and_goes_with_sigterm(tmp_path):
    lock = tmp_path / ".lock"
    replica = ReplicaLife({}, lock_path=str(lock), clock=StepClock())
    assert replica.readiness() == "starting" and not lock.exists()
    replica.mark_ready()
    assert replica.readiness() is None and lock.exists()
    replica.begin_drain()
    assert replica.readiness() == "draining" and not lock.exists() and replica.draining.is_set()
    replica.begin_drain()  # a second SIGTERM finds no lock and says nothing


def test_draining_exits_after_the_healthcheck_window_once_no_call_runs(tmp_path):
    clock = StepClock()
    replica = ReplicaLife({"healthcheck_interval": "2s", "write_timeout": "30s"}, lock_path=str(tmp_path / "l"),
                      clock=clock)
    assert not replica.may_exit()  # no SIGTERM yet
    replica.begin_drain()
    exits = []
    replica.drain(lambda: exits.append(clock()), sleep=clock.sleep)
    assert exits == [pytest.approx(1002.0, abs=0.06)]  # the first poll at or after the window


def test_a_running_call_holds_the_exit_until_write_timeout_past_the_window(tmp_path):
    clock = StepClock()
    replica = ReplicaLife({"healthcheck_interval": "1s", "write_timeout": "5s"}, lock_path=str(tmp_path / "l"),
                      clock=clock)
    replica.begin_drain()
    replica.running = 1  # a handler that never reaches its safe point
    exits = []
    replica.drain(lambda: exits.append(clock()), sleep=clock.sleep)
    assert exits == [pytest.approx(1006.0, abs=0.06)]


def test_without_a_healthcheck_interval_the_window_is_write_timeout(tmp_path):
    clock = StepClock()
    replica = ReplicaLife({"write_timeout": "4s"}, lock_path=str(tmp_path / "l"), clock=clock)
    replica.begin_drain()
    clock.sleep(3.9)
    assert not replica.may_exit()
    clock.sleep(0.2)
    assert replica.may_exit()


def test_the_socket_is_bound_where_the_watchdog_calls():
    assert listening_address({"upstream_url": "http://127.0.0.1:8081"}) == ("127.0.0.1", 8081)
    assert listening_address({}) == ("127.0.0.1", 5000)

"""Downpour's staleness bound over a fake store and a StepClock: a worker too far ahead waits for the slowest running
worker, polling through its own clock and sleep; 0 reads nothing; an ended job or a silent slowest ends the wait."""

from __future__ import annotations

from types import SimpleNamespace

from faasgd.config import load_config
from faasgd.downpour.staleness_bound import POLL_S, StalenessBound, slowest_step
from faasgd.store import keys
from faasgd.worker.progress import WorkerProgress
from support.fake_clock import StepClock


class Records:
    """The workers' progress records as a store holds them; `on_sleep` moves them on as time passes."""

    def __init__(self, steps: dict[int, int], states: dict[int, str] | None = None):
        self.steps, self.states, self.reads = steps, states or {}, 0

    def get_records(self, job_id, names):
        self.reads += 1
        out = {}
        for worker in range(4):
            step = self.steps.get(worker)
            out[keys.progress_name(worker)] = None if step is None else {
                "step": step, "state": self.states.get(worker, "running")}
        return {name: out.get(name) for name in names}


def worker(records: Records, step: int, *, max_staleness: int, ended=lambda: False, advance=None):
    clock = StepClock()
    progress = WorkerProgress.fresh(0, 0)
    progress.step = step
    beats = []

    def sleep(seconds):
        clock.sleep(seconds)
        if advance:
            advance()
    config = load_config({}, {"number_of_workers": 4, "max_staleness": max_staleness, "start_timeout_s": 5})
    w = SimpleNamespace(config=config, store=records, job_id="j", progress=progress, retry=lambda call: call(),
                        clock=clock, sleep=sleep, heartbeat=lambda: beats.append(clock()), job_ended=ended)
    return w, clock, beats


def test_the_slowest_is_the_fewest_steps_of_the_other_running_workers_and_one_not_started_counts_as_zero():
    records = {0: {"step": 90}, 1: {"step": 40}, 2: {"step": 10, "state": "finished"}, 3: {"step": 70}}
    assert slowest_step(records, me=0) == 40  # a finished worker is never waited for
    assert slowest_step({**records, 3: None}, me=0) == 0
    assert slowest_step({0: {"step": 5}}, me=0) is None


def test_zero_is_no_bound_and_reads_nothing():
    records = Records({0: 500, 1: 0, 2: 0, 3: 0})
    w, clock, _ = worker(records, 500, max_staleness=0)
    StalenessBound(w).wait()
    assert records.reads == 0 and clock.waits == [] and w.progress.straggling.bound_waits == 0


def test_a_worker_within_the_bound_goes_on_at_once():
    records = Records({0: 60, 1: 40, 2: 55, 3: 50})
    w, clock, _ = worker(records, 60, max_staleness=20)
    StalenessBound(w).wait()
    assert records.reads == 1 and clock.waits == [] and w.progress.straggling.bound_waits == 0


def test_a_worker_ahead_waits_polling_until_the_slowest_is_within_the_bound_heartbeating_meanwhile():
    records = Records({0: 100, 1: 40, 2: 90, 3: 95})

    def slowest_pushes():  # worker 1 pushes 10 steps a poll
        records.steps[1] += 10
    w, clock, beats = worker(records, 100, max_staleness=20, advance=slowest_pushes)
    StalenessBound(w).wait()
    assert records.steps[1] == 80  # 100 - 80 <= 20: it went on at the first poll that showed it
    assert clock.waits == [POLL_S] * 4 and len(beats) == 4
    counts = w.progress.straggling
    assert counts.bound_waits == 1 and abs(counts.bound_wait_s - 4 * POLL_S) < 1e-9


def test_a_wait_ends_when_the_job_ends():
    records = Records({0: 100, 1: 0, 2: 0, 3: 0})
    answers = iter([False, False, False, True])  # the job ends (a cancel, the target) after three polls
    w, clock, _ = worker(records, 100, max_staleness=5, ended=lambda: next(answers))
    StalenessBound(w).wait()
    assert len(clock.waits) == 3 and records.steps[1] == 0


def test_a_wait_ends_when_the_slowest_has_not_moved_for_start_timeout_s():
    records = Records({0: 100, 1: 0, 2: 0, 3: 0})
    w, clock, _ = worker(records, 100, max_staleness=5)
    StalenessBound(w).wait()
    assert abs(sum(clock.waits) - 5.0) < POLL_S + 1e-9  # start_timeout_s 5, then it goes on (lost: supervision's)

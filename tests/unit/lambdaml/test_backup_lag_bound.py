"""Backup workers, the merger's bound (lambdaml/backup_rounds.py) over fake records and a StepClock: it merges no round
more than LAG_BOUND rounds ahead of a running worker, reads the records only when a round would pass the slowest
count it knows, and ends in RoundTimeout naming the workers behind."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from faasgd.config import load_config
from faasgd.lambdaml.backup_rounds import LAG_BOUND, LagBound, behind
from faasgd.lambdaml.rounds import RoundTimeout
from faasgd.store import keys
from support.fake_clock import StepClock


class Records:
    def __init__(self, rounds: dict[int, int]):
        self.rounds, self.reads = rounds, 0

    def get_records(self, job_id, names):
        self.reads += 1
        return {keys.progress_name(w): {"rounds": r, "state": "running"} for w, r in self.rounds.items()}


def merger(records: Records, advance=None):
    clock = StepClock()

    def barrier_sleep(seconds):
        clock.sleep(seconds)
        if advance:
            advance()
    config = load_config({}, {"number_of_workers": 3, "algorithm": "grad_avg", "round_timeout_s": 2})
    return SimpleNamespace(config=config, store=records, job_id="j", me=0, workers=3, retry=lambda call: call(),
                           clock=clock, barrier_sleep=barrier_sleep), clock


def test_the_slowest_is_the_fewest_rounds_of_the_other_running_workers():
    assert behind({0: {"rounds": 9}, 1: {"rounds": 4}, 2: None, 3: {"rounds": 1, "state": "finished"}}, 0) == {1: 4, 2: 0}


def test_a_round_within_the_bound_goes_on_and_the_records_are_read_only_when_it_would_pass_the_slowest():
    records = Records({0: 40, 1: 40, 2: 38})
    w, clock = merger(records)
    bound = LagBound(w)
    bound.wait(LAG_BOUND)  # nobody can be further behind than round 0
    assert records.reads == 0
    bound.wait(40)
    assert records.reads == 1 and bound.slowest == 38
    bound.wait(38 + LAG_BOUND)  # still within what it knows: no read
    assert records.reads == 1 and clock.waits == []


def test_the_merger_waits_for_a_late_worker_to_catch_up():
    records = Records({0: 50, 1: 50, 2: 30})

    def catching_up():
        records.rounds[2] += 4
    w, clock = merger(records, catching_up)
    LagBound(w).wait(50)
    assert records.rounds[2] == 42 and len(clock.waits) == 3  # 50 - 42 = LAG_BOUND


def test_a_worker_that_never_catches_up_ends_the_wait_in_a_round_timeout_naming_it():
    w, clock = merger(Records({0: 50, 1: 50, 2: 30}))
    with pytest.raises(RoundTimeout, match="round 50") as timeout:
        LagBound(w).wait(50)
    assert "[2]" in str(timeout.value) and sum(clock.waits) >= 2

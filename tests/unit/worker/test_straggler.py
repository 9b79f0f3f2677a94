"""A worker slowed on purpose: whom the config or the X-Chaos-Slow header slows, the sleep after a step, and the
straggler keys' refusals naming the field."""

from __future__ import annotations

import pytest

from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.worker.progress import WorkerProgress
from faasgd.worker.straggler import Slowdown, from_header


def test_the_config_slows_the_worker_it_names_or_every_one():
    one = load_config({}, {"number_of_workers": 4, "slow_factor": 4, "slow_worker": 2})
    assert [Slowdown.for_worker(one, w).factor for w in range(4)] == [1.0, 1.0, 4.0, 1.0]
    every = load_config({}, {"number_of_workers": 4, "slow_factor": 2})
    assert [Slowdown.for_worker(every, w).factor for w in range(4)] == [2.0] * 4
    assert [Slowdown.for_worker(load_config(), w).factor for w in range(2)] == [1.0, 1.0]


def test_a_slowed_step_sleeps_factor_minus_one_times_its_time_and_counts_it():
    slept, progress = [], WorkerProgress.fresh(0, 0)
    slowdown = Slowdown(4.0, slept.append)
    assert slowdown.after(0.5, progress) == 1.5 and slowdown.after(0.25, progress) == 0.75
    assert slept == [1.5, 0.75] and progress.straggling.slowed_s == 2.25 and progress.straggling.slow_factor == 4.0
    never = []
    assert Slowdown(1.0, never.append).after(0.5, progress) == 0.0 and never == []


def test_the_header_slows_a_job_that_sets_no_slowdown_and_never_overrides_one_that_does():
    config = load_config({}, {"number_of_workers": 4})
    assert (from_header(config, "4:1").slow_factor, from_header(config, "4:1").slow_worker) == (4.0, 1)
    assert (from_header(config, "2.5").slow_factor, from_header(config, "2.5").slow_worker) == (2.5, -1)
    assert from_header(config, None) is config and from_header(config, "") is config
    own = load_config({}, {"number_of_workers": 4, "slow_factor": 3, "slow_worker": 0})
    assert from_header(own, "4:1") is own
    for bad in ("x", "0.5", "101", "2:x", "2:-2"):
        with pytest.raises(ConfigError, match="^X-Chaos-Slow: "):
            from_header(config, bad)


@pytest.mark.parametrize("values, field", [
    ({"number_of_workers": 4, "slow_worker": 4}, "slow_worker"),
    ({"slow_worker": -2}, "slow_worker"),
    ({"slow_factor": 0.5}, "slow_factor"),
    ({"slow_factor": 101}, "slow_factor"),
    ({"max_staleness": -1}, "max_staleness"),
    ({"max_staleness": 5, "algorithm": "grad_avg"}, "max_staleness"),
    ({"backup_workers": 1, "number_of_workers": 4}, "backup_workers"),  # downpour: max_staleness is its
    ({"backup_workers": 4, "number_of_workers": 4, "algorithm": "grad_avg"}, "backup_workers"),
    ({"backup_workers": -1, "algorithm": "grad_avg"}, "backup_workers"),
    ({"backup_workers": 1, "number_of_workers": 4, "algorithm": "grad_avg", "sync": "reduce_scatter"}, "backup_workers"),
    ({"backup_workers": 1, "number_of_workers": 4, "algorithm": "admm", "model": "lr", "dataset": "higgs-like"},
     "backup_workers"),
])
def test_bad_straggler_keys_are_refused_naming_the_field(values, field):
    with pytest.raises(ConfigError, match=f"^{field}: "):
        load_config({}, values)

"""Backup workers in the rounds' exchange (memory store, one thread a worker): a round merges the first
W - backup contributions, their mean by how many it merged, names its members; a late contribution is dropped and
its worker told; a worker that finds the round merged takes it without computing; re-entry counts once."""

from __future__ import annotations

import numpy as np
import pytest

from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds import ExchangeConfig, RoundState, taken_round
from support.rounds_drive import exchanges, in_threads, memory_url, new_job, values

W, LENGTH = 4, 10


def vectors() -> list[np.ndarray]:
    return [np.full(LENGTH, w + 1, np.float32) * np.arange(1, LENGTH + 1, dtype=np.float32) for w in range(W)]


def test_a_round_merges_the_first_three_of_four_and_the_late_worker_is_told_and_takes_the_merge():
    ex, vs = exchanges(memory_url(), new_job(), W, "reduce", backup=1), vectors()
    first = values(in_threads(3, lambda w: ex[w].all_reduce(0, vs[w])))  # worker 3 has not come
    expected = ((vs[0].astype(np.float64) + vs[1] + vs[2]) / 3).astype(np.float32)  # by how many it merged
    assert all(np.array_equal(merged, expected) for merged, _ in first)
    assert [stats.merged for _, stats in first] == [3, 0, 0] and [stats.late for _, stats in first] == [0, 0, 0]

    late, stats = ex[3].all_reduce(0, vs[3])  # it computed round 0 anyway: its contribution comes too late
    assert np.array_equal(late, expected) and stats.late == 1  # dropped, never folded into another round
    taken, stats = ex[3].merged_if_ready(0, LENGTH)  # or it finds round 0 merged before computing it
    assert np.array_equal(taken, expected) and stats.late == 1
    assert ex[3].merged_if_ready(1, LENGTH) is None  # round 1 is not merged: it computes and contributes

    again, stats = ex[0].all_reduce(0, vs[0])  # the merger re-enters: the stored merge, its members counted again
    assert np.array_equal(again, expected) and stats.merged == 3


def test_a_taken_round_applies_the_merge_as_the_algorithm_does():
    state, mean = RoundState(np.ones(3, np.float32), 5), np.array([1, 2, 3], np.float32)
    stepped = taken_round("grad_avg", state, mean, None, lr=0.5)
    assert np.array_equal(stepped.state.params, np.array([0.5, 0, -0.5], np.float32)) and stepped.state.round_no == 6
    assert np.array_equal(taken_round("model_avg", state, mean, None, lr=0.5).state.params, mean)
    with pytest.raises(ConfigError, match="^algorithm: "):
        taken_round("admm", state, mean, None, lr=0.5)


@pytest.mark.parametrize("values_, field", [({"workers": 4, "backup": 4}, "backup"), ({"workers": 4, "backup": -1}, "backup"),
                                            ({"workers": 4, "backup": 1, "pattern": "reduce_scatter"}, "backup")])
def test_bad_backup_settings_are_refused_naming_the_field(values_, field):
    with pytest.raises(ConfigError, match=f"^{field}: "):
        ExchangeConfig(**values_)

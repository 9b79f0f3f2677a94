"""bench/throughput.py: the shares of the workers' training time spent in gradient steps and in minibatches."""

from __future__ import annotations

import math

from support.bench_scripts import load_bench


bench = load_bench("throughput")


def test_shares_are_the_workers_summed_step_and_minibatch_seconds_over_their_summed_training_seconds():
    workers = [{"train_s": 2.0, "time_split": {"compute": 1.2, "batches": 0.2, "eval": 5.0}},
               {"train_s": 3.0, "time_split": {"compute": 2.3, "batches": 0.3, "load": 1.0}}]
    steps, batches = bench.time_shares(workers)
    assert math.isclose(steps, 3.5 / 5.0) and math.isclose(batches, 0.5 / 5.0)


def test_a_record_without_a_time_split_counts_nothing_spent():
    steps, batches = bench.time_shares([{"train_s": 1.0, "time_split": {"compute": 0.5}}, {"train_s": 1.0}])
    assert (steps, batches) == (0.25, 0.0)


def test_workers_that_trained_for_no_time_give_nan_not_a_crash():
    assert all(math.isnan(share) for share in bench.time_shares([{"train_s": 0.0}, {"train_s": 0.0}]))

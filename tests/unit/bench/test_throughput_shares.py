"""bench/throughput.py: the shares of the workers' training time spent in gradient steps and in minibatches; a cell's
rounds summarised."""

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


def test_a_cell_s_rounds_give_medians_per_figure_and_per_worker_and_the_pair_ratio_s_spread():
    def run(rate, workers, staleness):
        return {"samples_per_s": rate, "per_worker": workers, "staleness_p50": staleness, "conflicts": 3}
    row = bench.summarise([run(300.0, [140.0, 160.0], 20.0), run(100.0, [40.0, 60.0], None),
                           run(200.0, [90.0, 110.0], 10.0)], pair=400.0)
    assert row["samples_per_s"] == 200.0 and row["per_worker"] == [90.0, 110.0] and row["conflicts"] == 3
    assert row["staleness_p50"] == 15.0  # the rounds that had one
    assert row["pair_ratio"] == 0.5 and row["pair_spread"] == (0.25, 0.75)
    assert bench.summarise([run(100.0, [50.0, 50.0], None)], pair=400.0)["staleness_p50"] is None


def test_a_figure_a_round_could_not_tell_nan_is_left_out_of_its_median():
    def run(cores):
        return {"samples_per_s": 100.0, "per_worker": [50.0, 50.0], "store_cores": cores}
    row = bench.summarise([run(float("nan")), run(0.1), run(0.3), run(float("nan"))], pair=400.0)
    assert row["store_cores"] == 0.2  # of the two rounds that measured it
    assert bench.summarise([run(float("nan"))], pair=400.0)["store_cores"] is None
    assert bench.shown(None, ".2f") == "-" and bench.shown(0.125, ".2f") == "0.12" and bench.shown(0.5, ".0%") == "50%"

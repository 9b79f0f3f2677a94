"""`faasgd predict` on synthetic studies with a known law: it recovers held-out configurations, and transfers to
a second setting from a few runs there."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.run_study import compose_time, law, study, time_parts, write_study

from faasgd.cli.main import main
from faasgd.cli.predictor import (PARTS, TARGETS, Predictor, features, ridge, round_spread, target_value,
                                  transfer_curve, validate)
from faasgd.config import TrainConfig


def test_features_grow_with_the_models_parameters_and_name_the_store():
    small = features({**TrainConfig(dataset="synthetic", hidden_sizes=(10,)).to_dict()})
    large = features({**TrainConfig(dataset="synthetic", hidden_sizes=(100,), store="memcached").to_dict()})
    assert large[1] > small[1] and small[7] == 0 and large[7] == 1


def test_held_out_configurations_are_predicted_within_a_few_percent():
    found = validate(study("redis", 1.0, rounds=2))
    assert all(found[t]["predictions"] == 72 for t in TARGETS)
    assert all(found[t]["mape"] < 6.0 for t in TARGETS), found


def test_a_failed_run_or_a_missing_figure_is_left_out_of_the_fit():
    runs = study("redis", 1.0, rounds=1)
    runs[0]["state"], runs[1]["cpu_idle_s"] = "failed", None
    model = Predictor.fit(runs)
    assert model.runs_used["cpu_burst_s"] == 35 and model.runs_used["cpu_idle_s"] == 34


def test_an_interaction_of_workers_and_period_is_learnt():
    """On 2 cores four workers are not twice two: a figure whose exponent in the workers moves with the period
    (log-quadratic) is predicted for held-out configurations; a model linear in the logs misses it by ~40%."""
    runs = study("redis", 1.0, rounds=1)
    for run in runs:
        w, p = np.log(run["number_of_workers"]), np.log(run["n_push"])
        run["cpu_s"] = float(np.exp(0.5 * w * p - 0.3 * w * w + 0.2 * p))
    found = validate(runs)
    assert found["cpu_s"]["mape"] < 3.0, found["cpu_s"]


def test_a_time_shorter_than_ten_ticks_of_the_stores_clock_is_left_out():
    """Memcached's clock counts whole seconds: its 0.4 s reads 0 or 1 s; Redis's counts microseconds."""
    base = {**TrainConfig(dataset="synthetic").to_dict(), "state": "done"}
    assert target_value({**base, "store": "memcached", "time_to_target_s": 1.0}, "time_to_target_s") is None
    assert target_value({**base, "store": "memcached", "time_to_target_s": 12.0}, "time_to_target_s") == 12.0
    assert target_value({**base, "store": "redis", "time_to_target_s": 0.4}, "time_to_target_s") == 0.4
    assert target_value({**base, "store": "memcached", "cpu_s": 0.4}, "cpu_s") == 0.4  # not on the store's clock


def test_the_time_to_target_is_a_start_plus_samples_over_a_rate_each_learnt_from_every_run_that_has_it():
    """A short run's time is mostly its start (0.3 s of 0.6 s): a sum, which the parts (each log-linear) recover
    exactly and a log-linear fit of the time only roughly; a run that missed the target still teaches the rate
    and the start."""
    runs = study("redis", 1.0, rounds=1)
    for run in runs:
        time_parts(run, 1.0, start_s=0.3)
        run["samples_per_s"] *= 20.0  # seconds of training, beside 0.3-0.4 s of start
        compose_time(run, 0.3 * run["number_of_workers"] ** 0.2 * run["n_push"] ** -0.05)
    for run in runs[::4]:  # every fourth run missed the target: no time, no samples to target
        run["time_to_target_s"] = run["samples_to_target"] = None
    found = validate(runs)["time_to_target_s"]
    assert found["predictions"] == 27 and found["mape"] < 2.0, found
    model = Predictor.fit(runs)
    assert model.runs_used["samples_per_s"] == model.runs_used["start_s"] == 36
    assert model.runs_used["samples_to_target"] == 27
    timed = [(features(r), r["time_to_target_s"]) for r in runs if r["time_to_target_s"]]
    errors = []  # the time alone, log-linear, each run held out (one round: a run is its configuration)
    for i, (f, t) in enumerate(timed):
        rest = timed[:i] + timed[i + 1:]
        w = ridge(np.array([g for g, _ in rest]), np.log([u for _, u in rest]), 0.1)
        errors.append(abs(np.exp(f @ w) - t) / t)
    assert 100 * np.mean(errors) > 2 * found["mape"], (errors, found)


def test_start_and_rate_are_timed_on_the_whole_run_and_only_when_the_stores_clock_can():
    run = {**TrainConfig(dataset="synthetic").to_dict(), "state": "done", "samples": 1000, "samples_per_s": 100.0}
    assert target_value({**run, "store": "redis", "wall_s": 10.5}, "start_s") == pytest.approx(0.5)
    assert target_value({**run, "store": "redis", "wall_s": 10.5}, "samples_per_s") == 100.0
    assert target_value({**run, "store": "memcached", "wall_s": 9.0}, "samples_per_s") is None  # 9 ticks
    assert target_value({**run, "store": "redis", "wall_s": 9.0}, "start_s") is None  # no time left to start in
    assert target_value({**run, "store": "redis", "wall_s": 12.0, "state": "failed"}, "samples_per_s") is None


def test_round_spread_is_the_error_of_predicting_a_run_by_its_other_rounds():
    runs = study("redis", 1.0, rounds=2)
    for i, run in enumerate(runs):
        run["cpu_s"] = 1.0 if i % 2 == 0 else 2.0  # round 1 reads 1, round 2 reads 2: |2-1|/1 and |1-2|/2
    spread = round_spread(runs)
    assert spread["cpu_s"] == pytest.approx(75.0)
    assert spread[TARGETS[0]] < 6.0  # 3% noise on each round


def test_transfer_with_a_few_runs_does_not_spoil_a_setting_the_source_already_predicts():
    """A few noisy runs cannot fit twenty weights: they rescale the source (shrunk towards no change). Fitting
    every weight towards the source's with a weak pull (ridge 3) made this 11 points worse with 3 runs."""
    source = study("redis", 1.0, seed=1)
    target = study("memcached", 1.0, rounds=1, seed=2)
    for run in target:  # 20% noise on the target setting's runs (the time's on its parts)
        start = target_value(run, "start_s")
        run.update({t: run[t] * float(np.exp(np.random.default_rng(run["batch_size"] + run["n_push"]).normal(0, 0.2)))
                    for t in TARGETS + PARTS if t not in ("time_to_target_s", "start_s")})
        compose_time(run, start)
    curve = transfer_curve(source, target, [0, 1, 3], draws=5)
    assert all(curve[n][t] < curve[0][t] + 3 for t in TARGETS for n in (1, 3)), curve


def test_transfer_to_a_second_setting_needs_a_few_runs_there():
    source = study("redis", 1.0, seed=1)
    target = study("memcached", 2.5, rounds=1, seed=2)  # the same law, 2.5 x the figures
    curve = transfer_curve(source, target, [0, 5])
    assert all(curve[0][t] > 50 for t in TARGETS)  # the source predictor alone is far off
    assert all(curve[5][t] < 15 for t in TARGETS), curve[5]


def test_faasgd_predict_predicts_validates_and_transfers(tmp_path, capsys):
    path = tmp_path / "r.sqlite"
    write_study(path, study("redis", 1.0, rounds=1) + study("memcached", 2.0, rounds=1, seed=3))
    db = ["--db", str(path)]
    assert main(["predict", *db, "--where", "store=redis", "--set", "number_of_workers=4", "--set", "n_push=5",
                 "--set", "n_fetch=5", "--set", "batch_size=128", "--set", "dataset=synthetic", "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)["figures"]
    expected = law({"number_of_workers": 4, "n_push": 5, "batch_size": 128}, 0, 1.0)
    assert predicted[TARGETS[0]]["predicted"] == pytest.approx(expected, rel=0.05)
    assert main(["predict", *db, "--validate", "--where", "store=redis", "--json"]) == 0
    assert all(v["MAPE %"] < 6 for v in json.loads(capsys.readouterr().out).values())
    assert main(["predict", *db, "--transfer-to", "store=memcached", "--transfer-runs", "0", "--transfer-runs", "5",
                 "--json"]) == 0
    curve = json.loads(capsys.readouterr().out)
    assert all(v["5"] < v["0"] for v in curve.values())
    assert main(["predict", *db]) == 0  # a table, the defaults' prediction
    assert "time_to_target_s" in capsys.readouterr().out


@pytest.mark.parametrize("argv, field", [
    (["--set", "number_of_workers=0"], "number_of_workers"), (["--set", "nope=1"], "nope"),
    (["--where", "store=none"], "--where"), (["--transfer-to", "store=memcached", "--transfer-runs", "99"],
                                               "--transfer-runs"),
    (["--set", "number_of_workers"], "--set"), (["--level", "1.5"], "--level"), (["--level", "0"], "--level"),
    (["--validate", "--strict"], "--strict")])
def test_bad_input_names_the_field(tmp_path, capsys, argv, field):
    path = tmp_path / "r.sqlite"
    write_study(path, study("redis", 1.0, rounds=1)[:6] + study("memcached", 1.0, rounds=1)[:6])
    assert main(["predict", "--db", str(path), *argv]) == 2
    assert capsys.readouterr().err.startswith(f"faasgd: error: {field}: ")

"""`faasgd predict` knows its range: intervals that hold the true figure inside the recorded runs and widen away
from them, settings outside the recorded runs named (with --strict, refused), one JSON document with --json."""

from __future__ import annotations

import json

import pytest
from support.run_study import law, study, time_parts, write_study

from faasgd.cli.main import main
from faasgd.cli.predictor import TARGETS, Predictor, validate
from faasgd.config import TrainConfig

NOISY = [t for t in TARGETS if t != "time_to_target_s"]  # the study's time is noiseless: its parts follow the law
INSIDE = dict(number_of_workers=3, n_fetch=3, n_push=3, batch_size=100)  # in range, never recorded
SYNTHETIC = ["--set", "dataset=synthetic", "--set", "n_fetch=5", "--set", "n_push=5", "--set", "batch_size=128"]


def config(**settings) -> dict:
    return TrainConfig(dataset="synthetic", **{**INSIDE, **settings}).to_dict()


def true_value(settings: dict, target: str) -> float:
    if target != "time_to_target_s":
        return law(settings, TARGETS.index(target), 1.0)
    run = dict(settings)
    time_parts(run, 1.0)
    return run["time_to_target_s"]


def width(model: Predictor, settings: dict, target: str) -> float:
    low, high = model.interval(settings)[target]
    return high / low


def test_a_setting_inside_the_recorded_range_gets_an_interval_around_its_true_figure():
    model = Predictor.fit(study("redis", 1.0, rounds=2))
    asked = config()
    predicted, bounds = model.predict(asked), model.interval(asked)
    for target in TARGETS:
        low, high = bounds[target]
        assert low < predicted[target] < high and low <= true_value(asked, target) <= high, target
        assert high / low < 1.3, (target, low, high)  # 3% noise per run: an interval, not a shrug


def test_held_out_runs_lie_inside_their_interval_about_as_often_as_its_level():
    runs = study("redis", 1.0, rounds=2)
    at_90, at_50 = validate(runs, 0.9), validate(runs, 0.5)
    for target in NOISY:
        assert 80.0 <= at_90[target]["inside"] <= 98.0, (target, at_90[target])
        assert 30.0 <= at_50[target]["inside"] <= 70.0, (target, at_50[target])


def test_the_interval_widens_away_from_the_recorded_runs():
    """Workers 1-8 and only Redis recorded: 16 and 64 workers lie ever further out, and Memcached along a
    direction no run varied."""
    model = Predictor.fit(study("redis", 1.0, rounds=2))
    for target in NOISY:
        near, far, farther = (width(model, config(number_of_workers=w), target) for w in (4, 16, 64))
        assert near < far < farther, (target, near, far, farther)
        assert width(model, config(store="memcached"), target) > 1.2 * near, target


def test_too_few_runs_to_estimate_the_spread_give_no_interval_rather_than_a_false_one():
    model = Predictor.fit(study("redis", 1.0, rounds=1)[:2])  # twenty weights: no degree of freedom left
    assert model.predict(config())["cpu_s"] is not None
    assert all(bounds is None for bounds in model.interval(config()).values())


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "r.sqlite"
    write_study(path, study("redis", 1.0, rounds=1))
    return ["--db", str(path)]


def test_json_holds_figures_intervals_and_no_note_inside_the_range(db, capsys):
    assert main(["predict", *db, *SYNTHETIC, "--set", "number_of_workers=4", "--json", "--strict"]) == 0
    out, err = capsys.readouterr()
    found = json.loads(out)  # the whole of stdout: one document
    assert found["out_of_range"] == [] and found["level"] == 0.9 and found["runs"] == 36 and err == ""
    truth = law({"number_of_workers": 4, "n_push": 5, "batch_size": 128}, TARGETS.index("cpu_s"), 1.0)
    assert found["figures"]["cpu_s"]["low"] <= truth <= found["figures"]["cpu_s"]["high"]
    assert found["figures"]["cpu_s"]["runs"] == 36


def test_a_setting_outside_the_recorded_runs_is_named_with_its_value_and_the_recorded_range(db, capsys):
    assert main(["predict", *db, *SYNTHETIC, "--set", "number_of_workers=16", "--json", "--level", "0.8"]) == 0
    out, err = capsys.readouterr()
    found = json.loads(out)
    (note,) = found["out_of_range"]
    assert (note["feature"], note["value"], note["recorded"], note["kind"]) == ("number_of_workers", 16, [1, 8], "range")
    assert "number_of_workers=16" in err and "1-8" in err and found["level"] == 0.8
    figure = found["figures"]["cpu_s"]
    assert figure["low"] < figure["predicted"] < figure["high"]


def test_strict_exits_non_zero_naming_every_setting_outside_after_printing_the_prediction(db, capsys):
    assert main(["predict", *db, *SYNTHETIC, "--set", "number_of_workers=16", "--set", "store=memcached",
                 "--set", "push_codec=f16", "--json", "--strict"]) == 2
    out, err = capsys.readouterr()
    notes = {n["feature"]: n for n in json.loads(out)["out_of_range"]}
    assert set(notes) == {"number_of_workers", "store", "push_codec"}
    assert notes["store"]["recorded"] == ["redis"] and notes["push_codec"]["recorded"] == ["f32"]
    error = err.splitlines()[-1]
    assert error.startswith("faasgd: error: --strict: 3 setting(s) outside the recorded runs")
    assert "number_of_workers=16 (recorded: 1-8)" in error and "store=memcached (recorded: redis)" in error


def test_the_table_shows_the_interval_and_the_note_goes_to_stderr(db, capsys):
    assert main(["predict", *db, *SYNTHETIC, "--set", "batch_size=4096"]) == 0
    out, err = capsys.readouterr()
    assert "low" in out and "high" in out and "90% prediction interval" in out
    assert "batch_size=4096 is outside the recorded runs' range 64-256" in err and "batch_size=4096" not in out


def test_no_finished_run_to_learn_from_is_said(tmp_path, capsys):
    path = tmp_path / "r.sqlite"
    write_study(path, [{**run, "state": "failed"} for run in study("redis", 1.0, rounds=1)[:3]])
    assert main(["predict", "--db", str(path)]) == 2
    assert capsys.readouterr().err.startswith("faasgd: error: --where: none of the 3 matching runs finished")

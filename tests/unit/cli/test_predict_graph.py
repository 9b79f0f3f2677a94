"""`faasgd predict --graph`: a network's figures from the graph inspector learnt on a data set (the recorded runs of
tests/unit/bench/inspector-quick-head.jsonl), with split-conformal intervals, and bad input refused by name."""

from __future__ import annotations

import json
import math
import shlex
import shutil

import numpy as np
import pytest
from support.paths import ROOT

from faasgd.cli import graph_model, predict_graph
from faasgd.cli.main import main
from faasgd.profile.figures import DRIPLE

FIXTURE = ROOT / "tests" / "unit" / "bench" / "inspector-quick-head.jsonl"
NEW = ["--set", "hidden_sizes=96,48,24", "--set", "number_of_workers=4", "--set", "store=memcached"]


@pytest.fixture(autouse=True)
def few_epochs(monkeypatch):
    monkeypatch.setattr(graph_model, "EPOCHS", 60)
    monkeypatch.setattr(graph_model, "ENSEMBLE", 1)


def test_a_network_never_profiled_gets_every_figure_and_an_interval_around_it(capsys):
    assert main(["predict", "--graph", str(FIXTURE), *NEW, "--level", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["figures"]) == set(DRIPLE) and out["unseen_ops"] == [] and out["level"] == 0.5
    assert out["runs"] + out["calibration_runs"] == 10 and out["graph"]["nodes"] == 9
    cpu = out["figures"]["cpu_burst_use"]
    assert math.isfinite(cpu["predicted"]) and cpu["low"] <= cpu["predicted"] <= cpu["high"]


class Zero:
    """A model predicting log 1 for every figure: the residuals are the runs' own logs."""

    def log_predict(self, runs):
        return np.zeros((len(runs), len(DRIPLE)))


def test_the_conformal_quantile_is_the_ranked_residual_and_none_when_too_few_runs():
    runs = [{**json.loads(line), "cpu_burst_use": math.e ** k} for k, line in
            enumerate(FIXTURE.read_text().splitlines()[:4], 1)]
    assert predict_graph.quantiles(Zero(), runs, 0.5)["cpu_burst_use"] == pytest.approx(3.0)  # ceil(5 x 0.5): 3rd
    assert predict_graph.quantiles(Zero(), runs, 0.9)["cpu_burst_use"] is None  # ceil(5 x 0.9) = 5 > 4 runs


def test_a_cnn_is_predicted_with_its_unseen_ops_named(capsys):
    assert main(["predict", "--graph", str(FIXTURE), "--set", "model=cnn", "--set", "cnn_arch=lenet"]) == 0
    captured = capsys.readouterr()
    assert "op(s) conv, flatten, pool that no run" in captured.err
    assert "cpu_burst_use" in captured.out


@pytest.mark.parametrize("make, argv, field", [
    (None, [], "--graph"), ("garbage", [], "--graph"), ("one", [], "--graph"),
    ("copy", ["--validate"], "--graph"), ("copy", ["--where", "store=redis"], "--graph"),
    ("copy", ["--set", "hidden_sizes=0"], "hidden_sizes"), ("copy", ["--level", "2"], "--level")])
def test_bad_input_names_the_field(tmp_path, capsys, make, argv, field):
    path = tmp_path / "runs.jsonl"
    if make == "copy":
        shutil.copy(FIXTURE, path)
    elif make == "garbage":
        path.write_text(FIXTURE.read_text().splitlines()[0] + "\n{not json\n")
    elif make == "one":
        path.write_text(FIXTURE.read_text().splitlines()[0] + "\n")
    assert main(["predict", "--graph", str(path), *argv]) == 2
    assert capsys.readouterr().err.startswith(f"faasgd: error: {field}: ")


def documented_lines() -> list[str]:
    lines = []
    for page in ("how-to/predict.md", "explanation/graph-inspector.md"):
        text = (ROOT / "docs" / page).read_text()
        lines += [line.strip() for line in text.splitlines() if line.strip().startswith("faasgd predict --graph ")]
    return lines


def test_the_documented_lines_run_as_typed_on_a_data_set(capsys):
    """Each documented `faasgd predict --graph` line, its data set swapped for the recorded one (the docs' own is
    made by the line before it, `bench/inspector_data.py --quick`: minutes of jobs)."""
    lines = documented_lines()
    assert len(lines) == 2
    for line in lines:
        words = shlex.split(line)[1:]
        words[words.index("--graph") + 1] = str(FIXTURE)
        assert main(words) == 0, line
        assert "cpu_burst_use" in capsys.readouterr().out

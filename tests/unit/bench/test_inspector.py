"""bench/inspector.py's pipeline on recorded runs: inspector-quick-head.jsonl holds the first 10 rows of the plan
(5 architectures, 1 setting per family) as `python bench/inspector_data.py results/inspector-quick.jsonl --quick`
recorded them on the 2-core VM (real jobs, real profiles; not edited). Both models are fitted and scored on it,
and the bench's last line has the issue's format."""

from __future__ import annotations

import math
import re
import shutil

from support.bench_scripts import load_bench
from support.paths import ROOT

from faasgd.cli import graph_model

FIXTURE = ROOT / "tests" / "unit" / "bench" / "inspector-quick-head.jsonl"
inspector = load_bench("inspector")
data = load_bench("inspector_data")


def test_the_fixture_is_the_head_of_the_plan_so_nothing_is_run_again(tmp_path):
    path = tmp_path / "runs.jsonl"
    shutil.copy(FIXTURE, path)
    assert data.generate(str(path), 5, 1) == (0, 10)
    assert data.architectures(5) == data.architectures(10)[:5]  # a larger set extends a smaller one


def test_the_bench_ends_with_both_models_finite_mapes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(graph_model, "EPOCHS", 40)  # a tiny version: the line's format and finite figures
    monkeypatch.setattr(graph_model, "FINE_TUNE_EPOCHS", 20)
    monkeypatch.setattr(graph_model, "ENSEMBLE", 1)
    path = tmp_path / "runs.jsonl"
    shutil.copy(FIXTURE, path)
    assert inspector.main(["--data", str(path), "--architectures", "5", "--settings", "1", "--folds", "2",
                           "--draws", "1"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    found = re.fullmatch(r"held-out architectures MAPE: graph (\d+\.\d)% ridge (\d+\.\d)%", out[-1])
    assert found, out[-1]
    assert all(math.isfinite(float(v)) and float(v) > 0 for v in found.groups())
    assert any(line.startswith("| graph 0 runs") or "graph transfer" in line for line in out)


def test_held_out_architectures_are_never_in_the_training_runs():
    runs = data.read(str(FIXTURE))
    seen = []
    original = inspector.GraphModel.fit

    def spy(train, seed=0, **kwargs):
        seen.append({inspector.arch_of(r) for r in train})
        return original(train, seed=seed, epochs=5, members=1)

    inspector.GraphModel.fit = spy
    try:
        graph, ridge = inspector.held_out(runs, 2)
    finally:
        inspector.GraphModel.fit = original
    archs = {inspector.arch_of(r) for r in runs}
    assert len(seen) == 2 and all(s < archs for s in seen) and seen[0] | seen[1] == archs and not seen[0] & seen[1]
    assert graph["cpu_burst_use"] is not None and ridge["cpu_burst_use"] is not None

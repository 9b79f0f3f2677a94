"""`faasgd sweep FILE` end to end, as docs/how-to/sweep.md shows it: the page's sweep file, three short trials, each a
real job through the local runtime (started by the command and stopped at its end), the study read back from its
SQLite storage with Optuna's own client; then the page's Python lines over that study.

Run in a fresh folder (the storage's relative path lands there), adding only where the runtime lives (`--stack`,
`--dir`)."""

import json
import subprocess
import sys

import pytest

from faasgd.local import control
from support.paths import ROOT

pytestmark = pytest.mark.e2e
optuna = pytest.importorskip("optuna")
PAGE = ROOT / "docs" / "how-to" / "sweep.md"


def block(language: str) -> str:
    return PAGE.read_text().split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_three_trials_through_the_runtime_are_an_optuna_study(tmp_path):
    (tmp_path / "sweep.yml").write_text(block("yaml"))
    command = block("bash").strip()
    assert command == "faasgd sweep sweep.yml"
    run = subprocess.run([sys.executable, "-m", "faasgd.cli", *command.split()[1:], "--json", "--stack",
                          str(ROOT / "stack.yml"), "--dir", str(tmp_path / ".faasgd")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode in (0, 1), run.stdout[-2000:] + run.stderr[-3000:]
    study = optuna.load_study(study_name="lr-workers-push-store", storage=f"sqlite:///{tmp_path / 'sweep.db'}")
    assert len(study.trials) == 3 and all(t.user_attrs.get("job_id", "").startswith("j") for t in study.trials)
    for trial in study.trials:  # each trial's state says what its job did
        assert 0.05 <= trial.params["learning_rate"] <= 0.5 and trial.params["number_of_workers"] in (1, 2)
        assert trial.params["n_push"] in (1, 5) and trial.params["store"] in ("redis", "memcached")
        expected = "COMPLETE" if trial.user_attrs["reached_target"] else \
            "PRUNED" if trial.user_attrs["state"] == "done" else "FAIL"
        assert trial.state.name == expected, trial.user_attrs
        if expected == "COMPLETE":
            assert trial.value == trial.user_attrs["time_to_target_s"] > 0
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    best = json.loads(run.stdout)
    assert run.returncode == (0 if complete else 1) and (best is None) == (not complete)
    if complete:
        assert best["value"] == min(t.value for t in complete)
        assert best["job_id"] == study.best_trial.user_attrs["job_id"]
    assert control.read_state(str(tmp_path / ".faasgd")) is None  # the runtime it started, stopped
    read = subprocess.run([sys.executable, "-c", block("python")], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert read.returncode == 0, read.stderr[-2000:]
    assert [line.split()[-1] for line in read.stdout.splitlines()] == [t.user_attrs["job_id"] for t in study.trials]

"""A straggler through the local runtime as a user types it: `faasgd up --chaos slow:emnist-train:4:1` adds
X-Chaos-Slow to every delivery of emnist-train, and worker 1 of a job that sets no slowdown is slowed: the result names
it, its factor and the seconds it slept, and no other worker slept. On the stores directly (config slow_factor, and
max_staleness): tests/integration/test_stragglers_real.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from faasgd import api
from faasgd.local.lifecycle import control
from faasgd.local.services.stores import free_port
from support.paths import ROOT

pytestmark = pytest.mark.e2e


def test_chaos_slow_slows_the_worker_it_names_and_the_result_says_so(tmp_path):
    directory = str(tmp_path / ".faasgd")
    up = subprocess.run([sys.executable, "-m", "faasgd.cli", "up", "--chaos", "slow:emnist-train:4:1", "--port",
                         str(free_port()), "--dir", directory, "-f", str(ROOT / "stack.yml")],
                        capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        job = api.train({"dataset": "synthetic", "train_samples": 4000, "hidden_sizes": [64]}, number_of_workers=2,
                        max_epochs=2, target_accuracy=1.0, directory=directory)
        status = job.wait(timeout_s=120)
    finally:
        assert control.down(directory)
    result = status["result"]
    assert result["state"] == "done", result
    [straggler] = result["stragglers"]
    workers = {w["worker_id"]: w for w in status["workers"]}
    assert straggler["worker_id"] == 1 and straggler["slow_factor"] == 4.0 and straggler["slowed_s"] > 0
    assert straggler["slowed_s"] == pytest.approx(3 * workers[1]["time_split"]["compute"], rel=1e-3)
    assert "slowed_s" not in workers[0] and result["model_version"] == result["pushes"]

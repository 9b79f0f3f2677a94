"""`faasgd resume JOB --model-file FILE` through the local runtime, as typed, after the runtime's store lost JOB:
the CLI sends the file to emnist-setup's restore form (POST ?job_id=J&restore=1), then resumes JOB as from the
store. Directly on a store: tests/integration/test_resume_from_file_real.py; the rules: tests/unit/job/test_restore.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from faasgd import api
from faasgd.job import model_file
from faasgd.local.services.stores import free_port
from faasgd.store import keys, open_store
from support.paths import ROOT

pytestmark = pytest.mark.e2e


def faasgd(*argv: str, directory: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *argv, "--dir", directory], capture_output=True,
                          text=True, cwd=ROOT, timeout=240)


def test_a_job_the_runtimes_store_lost_resumes_from_its_model_file(tmp_path):
    directory = str(tmp_path / ".faasgd")
    with api.runtime(stack=str(ROOT / "stack.yml"), port=free_port(), directory=directory):
        first = faasgd("train", "--dataset", "synthetic", "--train-samples", "2000", "--hidden-sizes", "24",
                       "--workers", "1", "--max-epochs", "1", "--target-accuracy", "1.0", "--learning-rate", "0.02",
                       "--json", "--quiet", directory=directory)
        assert first.returncode == 0, first.stderr
        old = json.loads(first.stdout)
        path = tmp_path / "model.npz"
        saved = faasgd("model", old["job_id"], "-o", str(path), directory=directory)
        assert saved.returncode == 0, saved.stderr

        state = json.loads((Path(directory) / "state.json").read_text())
        store = open_store(state["stores"]["redis"]["url"], secrets_dir=str(Path(directory) / "secrets"))
        store.client.flushall()  # the runtime's store lost every job
        done = faasgd("resume", old["job_id"], "--model-file", str(path), "--max-epochs", "1", "--json", "--quiet",
                      directory=directory)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["resumed_from"] == old["job_id"] and result["state"] == "done"
        restored = store.get_record(old["job_id"], keys.RESTORED)
        assert restored["trained"]["samples"] == old["samples"]  # what the new job counts on from
        assert np.array_equal(store.read_copy(old["job_id"], keys.RESTORED_COPY),
                              model_file.from_npz(str(path)).params)
        status = api.job(result["job_id"], directory=directory).status()
        assert status["config"]["learning_rate"] == 0.02 and status["config"]["hidden_sizes"] == [24]

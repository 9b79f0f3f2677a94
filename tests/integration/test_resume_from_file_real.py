"""`faasgd resume JOB --model-file FILE --direct`, as typed, on a real Redis that lost JOB (FLUSHALL): the file's
parameters are put back under JOB, the new job starts from them with the file's configuration (the flags over it)
and counts on from what the file says JOB had trained. Through the runtime: tests/e2e/test_resume_e2e.py."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import redis

from faasgd import job
from faasgd.cli import direct
from faasgd.config import load_config
from faasgd.job import model_file
from faasgd.store import keys, open_store
from support.paths import ROOT


def faasgd(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)


def test_resume_from_a_model_file_after_the_store_lost_the_job(redis_server, tmp_path):
    store = open_store(redis_server.url)
    old_config = load_config({}, {"dataset": "synthetic", "train_samples": 2000, "hidden_sizes": [24],
                                  "number_of_workers": 1, "max_epochs": 1, "target_accuracy": 1.0,
                                  "learning_rate": 0.02, "store_url": redis_server.url})
    old_id = job.create_job(store, old_config)
    old = direct.run_job(old_config, store, old_id, 120.0)["result"]
    path = tmp_path / "model.npz"
    saved = faasgd("model", old_id, "-o", str(path), "--direct", "--store-url", redis_server.url)
    assert saved.returncode == 0, saved.stderr
    params = model_file.from_npz(str(path)).params

    redis.Redis.from_url(redis_server.url).flushall()  # the store lost every job
    lost = faasgd("resume", old_id, "--direct", "--store-url", redis_server.url)
    assert lost.returncode != 0 and old_id in lost.stderr, lost.stderr  # without its file: not found, nothing run
    done = faasgd("resume", old_id, "--model-file", str(path), "--direct", "--store-url", redis_server.url,
                  "--max-epochs", "2", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    assert f"job {old_id}: its parameters put back from its model file" in done.stderr
    result = json.loads(done.stdout)
    assert result["resumed_from"] == old_id and result["state"] == "done"
    status = job.read_status(store, result["job_id"])
    assert status["config"]["hidden_sizes"] == [24] and status["config"]["learning_rate"] == 0.02  # the file's
    assert status["config"]["max_epochs"] == 2 and status["config"]["resume_from"] == old_id  # the flag over it
    meta = job.read_job(store, result["job_id"])[1]
    assert meta["resumed_from"] == {"job_id": old_id, "restored": True, "samples": old["samples"],
                                    "epochs": old["epochs"], "wall_s": old["wall_s"]}
    assert np.array_equal(store.read_copy(old_id, keys.RESTORED_COPY), params)  # what resume_point started from

    again = faasgd("resume", old_id, "--model-file", str(path), "--direct", "--store-url", redis_server.url,
                   "--max-epochs", "1", "--json", "--quiet")  # a second resume from the same file: the same start
    assert again.returncode == 0, again.stderr
    assert "were put back from its model file before: resuming from them" in again.stderr
    assert json.loads(again.stdout)["resumed_from"] == old_id

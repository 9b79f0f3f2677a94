"""Job control through the local runtime, as a user types it: `faasgd train --detach` returns with the job's id,
`faasgd cancel JOB` ends it `cancelled`, a second cancel is refused naming the state; emnist-setup's HTTP form
(POST ?job_id=J&cancel=1) cancels a per-iteration job whose calls are queued one after another, and no call trains
after it. The same on the stores directly, in every mode: tests/integration/test_cancel_real.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from faasgd import api
from faasgd.local.services.stores import free_port
from faasgd.openfaas import SETUP_FUNCTION, FunctionError, json_answer
from support.paths import ROOT

pytestmark = pytest.mark.e2e
LONG = ["--dataset", "synthetic", "--train-samples", "20000", "--hidden-sizes", "32", "--workers", "2",
        "--max-epochs", "500", "--target-accuracy", "1.0"]


def faasgd(*argv: str, directory: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *argv, "--dir", directory], capture_output=True,
                          text=True, cwd=ROOT, timeout=240)


def trained(job: api.Job, samples: int, seconds: float = 120.0) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = job.status()
        assert status["state"] == "running", status.get("result")
        if sum((w or {}).get("samples", 0) for w in status["workers"]) >= samples:
            return status
        time.sleep(0.1)
    raise AssertionError(f"job {job.job_id} trained fewer than {samples} samples in {seconds} s")


def test_detach_then_cancel_from_the_command_line_and_over_http(tmp_path):
    directory = str(tmp_path / ".faasgd")
    with api.runtime(stack=str(ROOT / "stack.yml"), port=free_port(), directory=directory):
        detached = faasgd("train", *LONG, "--detach", "--json", directory=directory)
        assert detached.returncode == 0, detached.stderr
        answer = json.loads(detached.stdout)
        assert answer["state"] == "running" and f"faasgd cancel {answer['job_id']}" in detached.stderr
        job = api.job(answer["job_id"], directory=directory)
        trained(job, 4_000)  # the command returned, the job went on

        cancelled = faasgd("cancel", job.job_id, "--json", directory=directory)
        assert cancelled.returncode == 0, cancelled.stderr
        status = json.loads(cancelled.stdout)
        assert status["state"] == "cancelled" and status["cancelled"]["by"] == "http", status.get("result")
        assert status["result"]["model_version"] == sum(w["pushes"] for w in status["workers"])
        again = faasgd("cancel", job.job_id, directory=directory)
        assert again.returncode == 4 and "has ended (cancelled)" in again.stderr, again.stderr

        # per-iteration: every iteration a queued call; cancelled over HTTP through the Python API
        job = api.train({"dataset": "synthetic", "train_samples": 20000, "hidden_sizes": [32]}, number_of_workers=2,
                        max_epochs=500, target_accuracy=1.0, invocation_mode="per-iteration", directory=directory)
        trained(job, 4_000)
        asked = time.monotonic()
        status = job.cancel(timeout_s=30)
        assert status["state"] == "cancelled" and time.monotonic() - asked < 10, status.get("result")
        samples = status["result"]["samples"]
        time.sleep(2.0)  # a call queued before the cancel starts, sees it and trains nothing
        after = job.status()
        assert sum(w["samples"] for w in after["workers"]) == samples
        assert after["result"]["model_version"] == sum(w["pushes"] for w in after["workers"])

        client = api.connect(directory=directory)
        for query, field in (({"job_id": job.job_id, "cancel": "2"}, "cancel"),
                             ({"job_id": job.job_id, "cancel": "1", "why": "x"}, "why")):
            with pytest.raises(FunctionError) as refused:
                json_answer(client.invoke(SETUP_FUNCTION, b"", query=query), SETUP_FUNCTION)
            assert refused.value.http_status == 400 and refused.value.field == field
        with pytest.raises(FunctionError) as missing:
            client.cancel_job({"job_id": "j0000000000000000"})
        assert missing.value.http_status == 404

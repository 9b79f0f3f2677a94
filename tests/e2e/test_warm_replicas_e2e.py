"""A warm replica after a cnn job, through `faasgd up` (its replicas under of-watchdog when it is found): the
emnist-train replica that loaded TensorFlow renews itself in place once the cnn job's worker has ended
(functions/replica_renewal.py), so the MLP job that comes next runs in a process whose memory peak (VmHWM, read
from /proc by the test) stays below the bound admission used for that job. The replica is the same process (no
restart, the same pid), the MLP job's calls all started after the renewal, and the job ends done."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import psutil
import pytest
from support.hostile_runtime import runtime_up
from support.paths import ROOT

from faasgd.config import load_config
from faasgd.functions import admission
from faasgd.functions.replica_renewal import RENEWALS_ENV, RENEWED_AT_ENV
from faasgd.local.replicas import pods
from faasgd.openfaas import wait_for_job
from faasgd.testing import stacks

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
if importlib.util.find_spec("tensorflow") is None:  # not imported here: the test process need not hold it
    pytest.skip("model cnn needs TensorFlow (the extra `tf`)", allow_module_level=True)

SMALL = {"dataset": "synthetic", "train_samples": 660, "validation_samples": 60, "test_samples": 100,
         "batch_size": 30, "number_of_workers": 1, "target_accuracy": 1.0, "invocation_mode": "loop"}
CNN = {**SMALL, "model": "cnn", "cnn_arch": "lenet", "learning_rate": 0.05, "max_epochs": 1}
MLP = {**SMALL, "hidden_sizes": [64], "max_epochs": 2}


def one_replica_stack(directory: Path) -> str:
    """The repository's stack with one emnist-train replica, so the MLP job lands where the cnn job ran."""
    def one(stack: dict) -> None:
        train = stack["functions"]["emnist-train"]
        train["labels"] = {"com.openfaas.scale.min": "1", "com.openfaas.scale.max": "1"}
        train["environment"]["worker_slots"] = ""
    return stacks.stack_copy(ROOT, directory / "stack", edit=one)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    directory = tmp_path_factory.mktemp("warm")
    with runtime_up(directory / ".faasgd", one_replica_stack(directory)) as up:
        yield up


def function_process(runtime) -> psutil.Process:
    """emnist-train's `python index.py`: forked by the runtime's zygote, or the replica itself, or its watchdog's
    child (local/replicas/pods.py)."""
    entry = next(r for r in runtime.state["replicas"] if r["name"].startswith("emnist-train-"))
    return pods.function_process(runtime.dir, entry["name"], entry["pid"])


def peak_bytes(pid: int) -> int:
    """VmHWM: the process's resident peak since it last exec'd."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) << 10
    raise AssertionError(f"no VmHWM for {pid}")


class PeakWatch:
    """The highest VmHWM of `pid` seen while the block runs (read every 0.1 s: a renewal starts it again)."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, peak_bytes(self.pid))

    def __enter__(self) -> PeakWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, peak_bytes(self.pid))


def run_job(gateway, body: dict) -> dict:
    answer = gateway.invoke("emnist-setup", body)
    assert answer.status == 202, answer.body
    return wait_for_job(lambda: gateway.job_status(answer.json()["status_query"]), 300, poll_s=0.2)


def test_after_a_cnn_job_an_mlp_job_runs_in_a_renewed_replica_within_its_admitted_memory(runtime):
    process = function_process(runtime)
    bound = admission.check_job(load_config({}, MLP), {}, "redis")["worker_bytes"]  # what setup admitted it with
    with PeakWatch(process.pid) as during_cnn:
        cnn = run_job(runtime.gateway, CNN)
    assert cnn["state"] == "done", cnn["result"]
    assert during_cnn.peak > bound  # the replica held TensorFlow: above what the MLP job is admitted with

    mlp = run_job(runtime.gateway, MLP)  # at once: its calls may come while the replica renews
    assert mlp["state"] == "done", mlp["result"]
    peak = peak_bytes(process.pid)
    assert peak < bound, f"the MLP job's replica peaked at {peak >> 20} MiB, admitted with {bound >> 20} MiB"
    assert function_process(runtime).pid == process.pid and process.is_running()  # renewed in place
    assert runtime.gateway.function_status("emnist-train")["restarts"] == 0
    environ = process.environ()
    assert environ.get(RENEWALS_ENV) == "1", environ.get(RENEWALS_ENV)
    starts = [start for worker in mlp["workers"] for start, _ in worker["intervals"]]
    assert starts and min(starts) > float(environ[RENEWED_AT_ENV])  # so the peak above is the MLP job's own

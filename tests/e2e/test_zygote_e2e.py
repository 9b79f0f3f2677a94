"""Replicas under of-watchdog whose function processes fork from the runtime's zygote (local/replicas/zygote.py), end to
end through `faasgd up`: each function process is the zygote's child, named for its replica, listed by the gateway;
a job runs; a scaled-down replica takes its function process along; a killed zygote takes every function process
with it, the daemon reaps it and starts another, and the replicas come back, still serving jobs, a new one forked
by the new zygote; `faasgd down` leaves none of
them (support.hostile_runtime checks it after each runtime). FAASGD_NO_ZYGOTE=1 starts no zygote."""

from __future__ import annotations

import json
import os
import time

import psutil
import pytest

from faasgd.local.replicas import pods
from faasgd.openfaas import wait_for_job
from support import openfaas_bin
from support.hostile_runtime import runtime_up

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
SMALL = {"dataset": "synthetic", "train_samples": 3000, "test_samples": 300, "hidden_sizes": [16],
         "number_of_workers": 2, "target_accuracy": 0.8}


@pytest.fixture(autouse=True)
def watchdog_found():
    if openfaas_bin.find("fwatchdog") is None:
        pytest.skip(openfaas_bin.missing_reason("fwatchdog"))
    if os.geteuid() != 0:
        pytest.skip("replicas under the watchdog need a network namespace each, so root")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    if openfaas_bin.find("fwatchdog") is None or os.geteuid() != 0:
        pytest.skip("needs fwatchdog and root")
    with runtime_up(tmp_path_factory.mktemp("zygote") / ".faasgd") as up:
        yield up


def functions(runtime) -> dict[str, psutil.Process]:
    """Each replica's function process, by replica name, as the state file lists the replicas now."""
    state = json.loads((runtime.dir / "state.json").read_text())
    return {r["name"]: pods.function_process(runtime.dir, r["name"], r["pid"]) for r in state["replicas"]}


def run_job(runtime) -> dict:
    answer = runtime.gateway.invoke("emnist-setup", SMALL)
    assert answer.status == 202, answer.body
    return wait_for_job(lambda: runtime.gateway.job_status(answer.json()["status_query"]), 180, poll_s=0.3)


def test_each_function_process_is_the_zygotes_child_named_for_its_replica(runtime):
    zygote = runtime.state["zygote"]["pid"]
    found = functions(runtime)
    assert len(found) == len(runtime.state["replicas"]) >= 3
    for name, process in found.items():
        assert process.ppid() == zygote and process.name() == name[:15]
        assert process.cwd() == str(runtime.dir / "build" / name.rsplit("-", 1)[0])
    listed = runtime.gateway.function_status("emnist-train")["function_pids"]
    assert sorted(listed) == sorted(p.pid for n, p in found.items() if n.startswith("emnist-train-"))
    assert run_job(runtime)["state"] == "done"


def test_a_scaled_down_replica_takes_its_function_process_along(runtime):
    going = functions(runtime)["emnist-train-2"]  # scale-down retires the newest
    runtime.gateway.scale("emnist-train", 1)
    going.wait(30)  # psutil raises TimeoutExpired if it stays
    runtime.gateway.scale("emnist-train", 2)
    runtime.gateway.wait_for_replicas("emnist-train", 2, 60, poll_s=0.2)


def test_a_killed_zygote_takes_its_functions_and_another_takes_its_place(runtime):
    before, old = list(functions(runtime).values()), psutil.Process(runtime.state["zygote"]["pid"])
    old.kill()
    for process in before:
        process.wait(30)  # each died with the zygote (its parent-death signal)
    old.wait(10)  # reaped by the daemon: no zombie left to it
    deadline = time.monotonic() + 30
    while (new := json.loads((runtime.dir / "state.json").read_text())["zygote"]["pid"]) == old.pid:
        assert time.monotonic() < deadline, "no new zygote in state.json"
        time.sleep(0.1)
    assert psutil.Process(new).ppid() == runtime.state["pid"]  # the daemon's child, as the first
    for function in ("emnist-setup", "emnist-train"):
        runtime.gateway.wait_for_replicas(function, 2 if function == "emnist-train" else 1, 90, poll_s=0.2)
    assert run_job(runtime)["state"] == "done"
    assert runtime.gateway.function_status("emnist-train")["restarts"] >= 2
    had = set(functions(runtime))
    runtime.gateway.scale("emnist-train", 3)  # a replica started now forks from the new zygote
    runtime.gateway.wait_for_replicas("emnist-train", 3, 90, poll_s=0.2)
    (added,) = set(functions(runtime)) - had
    assert functions(runtime)[added].ppid() == new
    runtime.gateway.scale("emnist-train", 2)


def test_faasgd_no_zygote_starts_none(tmp_path, monkeypatch):
    monkeypatch.setenv("FAASGD_NO_ZYGOTE", "1")
    with runtime_up(tmp_path / ".faasgd") as up:
        assert "zygote" not in up.state and pods.function_pids(up.dir) == []
        for entry in up.state["replicas"]:
            function = pods.function_process(up.dir, entry["name"], entry["pid"])
            assert psutil.Process(entry["pid"]) in function.parents()  # the watchdog's child, as in an image

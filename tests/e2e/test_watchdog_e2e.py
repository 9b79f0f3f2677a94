"""The process backend under the real of-watchdog, end to end: `faasgd up` with fwatchdog found runs each
replica as fwatchdog -> python index.py (each watchdog in a network namespace of its own, so they do not
fight over its fixed metrics port 8081), `faasgd status` says so, a job runs through it, the readiness lock
lands in the replica's own TMPDIR, and a scaled-down replica drains and leaves no process. With
`--watchdog off` replicas are bare `python index.py` and status says that instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from faasgd.local.lifecycle import credentials
from faasgd.local.replicas import pods
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient, wait_for_job
from support import openfaas_bin
from support.paths import ROOT

pytestmark = pytest.mark.e2e
FWATCHDOG = openfaas_bin.find("fwatchdog")
SMALL = {"dataset": "synthetic", "train_samples": 3000, "test_samples": 300, "hidden_sizes": [16],
         "number_of_workers": 2, "target_accuracy": 0.8}


def faasgd(*args, timeout=180, env=None):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


def start(directory: Path, *flags, env=None) -> dict:
    started = faasgd("up", "--port", free_port(), "--dir", directory, "--wait", *flags, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    return {"up": started.stdout, "state": json.loads((directory / "state.json").read_text())}


def gateway(state: dict) -> GatewayClient:
    return GatewayClient(state["gateway_url"], 30, auth=credentials.read(Path(state["dir"]) / "secrets"))


def replica(state: dict, name: str) -> psutil.Process:
    return psutil.Process(next(r["pid"] for r in state["replicas"] if r["name"] == name))


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    if FWATCHDOG is None:
        pytest.skip(openfaas_bin.missing_reason("fwatchdog"))
    if os.geteuid() != 0:
        pytest.skip("replicas under the watchdog need a network namespace each, so root")
    directory = tmp_path_factory.mktemp("watched") / ".faasgd"
    runtime = start(directory, "--watchdog", FWATCHDOG)
    yield {**runtime, "dir": directory}
    assert faasgd("down", "--dir", directory).returncode == 0


def test_each_replica_is_fwatchdog_forking_python_index_py(watched):
    state, version = watched["state"], openfaas_bin_version()
    assert state["watchdog"]["path"] == FWATCHDOG and state["watchdog"]["version"] == version
    line = f"replicas under of-watchdog {version} ({FWATCHDOG})"
    assert line in watched["up"]
    namespaces = set()
    for entry in state["replicas"]:
        process = psutil.Process(entry["pid"])
        assert process.name() == "fwatchdog" and process.cmdline() == [FWATCHDOG]
        standing = [c for c in process.children() if c.cmdline()[-2:] == [sys.executable, "index.py"]]
        assert len(standing) == 1  # its fprocess: `netns.py enter ... python index.py`, or (executed) the function
        function = pods.function_process(Path(watched["dir"]), entry["name"], entry["pid"])
        assert function.pid != standing[0].pid and function.ppid() == state["zygote"]["pid"]  # forked by the zygote
        assert Path(function.cwd()) == Path(watched["dir"]) / "build" / entry["function"]
        namespaces.add(os.readlink(f"/proc/{process.pid}/ns/net"))
    assert len(namespaces) == len(state["replicas"]) >= 2  # one 8081 each
    status = faasgd("status", "--dir", watched["dir"], "--gateway", state["gateway_url"])
    assert status.returncode == 0 and line in status.stdout, status.stdout + status.stderr


def openfaas_bin_version() -> str:
    done = subprocess.run([FWATCHDOG, "--version"], capture_output=True, text=True, timeout=10)
    return (done.stdout + done.stderr).split("Version:")[1].split()[0]


def test_a_job_runs_through_the_watchdogs_and_the_lock_is_in_the_replicas_tmpdir(watched):
    state = watched["state"]
    client = gateway(state)
    answer = client.invoke("emnist-setup", SMALL)
    assert answer.status == 202, answer.body
    status = wait_for_job(lambda: client.job_status(answer.json()["status_query"]), 180, poll_s=0.3)
    assert status["state"] == "done", status
    name = next(r["name"] for r in state["replicas"] if r["function"] == "emnist-train")
    assert (Path(watched["dir"]) / "replicas" / name / "tmp" / ".lock").is_file()
    log = (Path(watched["dir"]) / "logs" / f"{name}.log").read_text()
    assert "Listening on port" in log and "stderr: " in log  # the watchdog's lines and the function's, one log


def test_a_scaled_down_replica_drains_under_the_watchdog_and_leaves_nothing(watched):
    state, client = watched["state"], gateway(watched["state"])
    going = replica(state, "emnist-train-2")
    family = [going, *going.children(recursive=True),
              pods.function_process(Path(watched["dir"]), "emnist-train-2", going.pid)]  # the zygote's child too
    client.scale("emnist-train", 1)
    gone, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, f"left running: {[p.pid for p in alive]}"
    log = (Path(watched["dir"]) / "logs" / "emnist-train-2.log").read_text()
    assert "SIGTERM: no new connections in 5s" in log and "Exiting. Active connections: 0" in log
    client.scale("emnist-train", 2)
    client.wait_for_replicas("emnist-train", 2, 60, poll_s=0.2)


def test_off_runs_bare_python_index_py_and_status_says_so(tmp_path):
    directory = tmp_path / ".faasgd"
    runtime = start(directory, "--watchdog", "off")
    try:
        state = runtime["state"]
        line = "replicas as bare `python index.py` (no fwatchdog found: --watchdog off)"
        assert line in runtime["up"] and state["watchdog"]["describe"] == line
        process = replica(state, "emnist-setup-1")
        assert process.cmdline() == [sys.executable, "index.py"]
        status = faasgd("status", "--dir", directory, "--gateway", state["gateway_url"])
        assert line in status.stdout, status.stdout + status.stderr
    finally:
        assert faasgd("down", "--dir", directory).returncode == 0


def test_a_bad_watchdog_is_refused_before_anything_starts(tmp_path):
    directory = tmp_path / ".faasgd"
    refused = faasgd("up", "--port", free_port(), "--dir", directory, "--watchdog", tmp_path / "nothing")
    assert refused.returncode == 2 and "--watchdog" in refused.stderr, refused.stderr
    assert not (directory / "state.json").exists()

"""api.stop_runtime stops only a runtime this Python process started with api.start_runtime: one a terminal's
`faasgd up` (or another session) started is left running, as the Python API tutorial says; force=True stops it all
the same. `faasgd up`/`down` are stand-ins here (control.up and control.down); the state file is real."""

import json
import os

import psutil
import pytest

from faasgd import api
from faasgd.api import local_runtime
from faasgd.local.lifecycle import control

ME = {"pid": os.getpid(), "create_time": psutil.Process().create_time()}  # a live process playing the daemon


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A folder whose state file names a running daemon; control.up answers `started` as set, control.down is
    recorded (nothing is stopped)."""
    directory = tmp_path / ".faasgd"
    directory.mkdir()
    state = {**ME, "gateway_url": "http://127.0.0.1:1"}
    (directory / "state.json").write_text(json.dumps(state))
    stack = tmp_path / "stack.yml"
    stack.write_text("version: 1.0\n")
    downs, answer = [], {"started": False}
    monkeypatch.setattr(control, "up", lambda *a, **k: (state, answer["started"]))
    monkeypatch.setattr(control, "down", lambda d: downs.append(d) or [ME["pid"]])
    monkeypatch.setattr(local_runtime, "_STARTED_HERE", {}, raising=False)
    return {"dir": str(directory), "stack": str(stack), "downs": downs, "answer": answer}


def test_a_runtime_found_running_is_left_running(runtime):
    rt = api.start_runtime(runtime["stack"], directory=runtime["dir"])
    assert not rt.started
    assert api.stop_runtime(runtime["dir"]) == [] and runtime["downs"] == []


def test_a_runtime_started_here_is_stopped_once(runtime):
    runtime["answer"]["started"] = True
    assert api.start_runtime(runtime["stack"], directory=runtime["dir"]).started
    assert api.stop_runtime(runtime["dir"]) == [ME["pid"]] and runtime["downs"] == [runtime["dir"]]
    assert api.stop_runtime(runtime["dir"]) == [] and len(runtime["downs"]) == 1


def test_force_stops_a_runtime_found_running(runtime):
    api.start_runtime(runtime["stack"], directory=runtime["dir"])
    assert api.stop_runtime(runtime["dir"], force=True) == [ME["pid"]] and runtime["downs"] == [runtime["dir"]]


def test_a_runtime_started_here_then_replaced_by_another_is_left_running(runtime, tmp_path):
    runtime["answer"]["started"] = True
    api.start_runtime(runtime["stack"], directory=runtime["dir"])
    parent = psutil.Process().parent()  # another live process: the runtime someone started after ours ended
    (tmp_path / ".faasgd" / "state.json").write_text(json.dumps({"pid": parent.pid, "create_time": parent.create_time()}))
    assert api.stop_runtime(runtime["dir"]) == [] and runtime["downs"] == []


def test_the_runtime_block_stops_only_what_it_started(runtime):
    with api.runtime(runtime["stack"], directory=runtime["dir"]):
        pass
    assert runtime["downs"] == []
    runtime["answer"]["started"] = True
    with api.runtime(runtime["stack"], directory=runtime["dir"]):
        pass
    assert runtime["downs"] == [runtime["dir"]]

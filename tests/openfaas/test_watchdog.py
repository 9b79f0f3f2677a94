"""The template and the functions under the real of-watchdog 0.11.3, as a cluster runs them.

Each scenario is a pod (tests/openfaas/pod.py) in a private network namespace (`unshare -n`): the
function's build folder laid out by the real `faas-cli build --shrinkwrap`, the image's Python with the
core alone, started as the image starts (`python -S bootstrap.py fwatchdog`), with faas-netes' environment.
Runs in `make test` whenever fwatchdog is found (FAASGD_WATCHDOG, PATH, ../shared/bin); says so otherwise.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from support import openfaas_bin
from support.function_image import build_image

pytestmark = [pytest.mark.openfaas, pytest.mark.serial]  # exec_timeout and SIGTERM timed alone (make test)

FWATCHDOG = openfaas_bin.find("fwatchdog")
if FWATCHDOG is None:
    pytest.skip(openfaas_bin.missing_reason("fwatchdog"), allow_module_level=True)
UNSHARE = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
if shutil.which("unshare") is None or shutil.which("ip") is None:
    pytest.skip("unshare (util-linux) and ip (iproute2) are needed to run the watchdog in its own network "
                "namespace; the real-watchdog tests did not run", allow_module_level=True)
POD = pathlib.Path(__file__).with_name("pod.py")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return build_image(tmp_path_factory.mktemp("openfaas-image"))


def pod(image, scenario: str, tmp_path, timeout_s: float = 600) -> dict:
    python, build = image
    args = {"python": python, "build": str(build), "fwatchdog": FWATCHDOG, "workdir": str(tmp_path)}
    done = subprocess.run([*UNSHARE, sys.executable, str(POD), scenario, json.dumps(args)], capture_output=True,
                          text=True, timeout=timeout_s, cwd=pathlib.Path(__file__).parent)
    log = (tmp_path / "pod.log").read_text(errors="replace") if (tmp_path / "pod.log").exists() else ""
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}\npod log:\n{log[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_calls_from_the_watchdogs_first_instant_all_get_the_functions_json_answer(image, tmp_path):
    found = pod(image, "first_instant", tmp_path)
    assert found["statuses"] == [404] * 50, found  # the function's own answer (no such job), never a 500
    assert found["json"] == 50 and found["empty"] == 0
    assert "no job" in found["first"]


def test_a_tiny_job_through_the_real_watchdog_ends_done_with_every_push_once(image, tmp_path):
    found = pod(image, "tiny_job", tmp_path)
    assert found["state"] == "done", found
    assert found["samples"] == found["expected_samples"] and found["version"] == found["pushes"]


def test_sigterm_mid_training_hands_the_worker_on_and_the_job_ends_with_nothing_trained_twice(image, tmp_path):
    found = pod(image, "sigterm", tmp_path)
    assert found["watchdog_exit"] == 0 and found["handed_off"], found  # index.py drained and exited 0
    assert found["state"] == "done", found
    assert found["samples"] == found["expected_samples"]  # every step trained once
    assert found["version"] == found["pushes"] > found["pushes_at_sigterm"]  # every push applied once
    assert found["invocations"][0] >= 2


def test_a_call_past_exec_timeout_gets_a_json_504_and_its_work_is_handed_on(image, tmp_path):
    found = pod(image, "exec_timeout", tmp_path)
    assert found["status"] == 504 and found["content_type"] == "application/json", found
    assert "deadline" in json.loads(found["body"])["error"] and found["elapsed"] < 3.0
    assert found["internal"] is None  # index.py's answer, before the watchdog's own empty one
    assert found["state"] == "done", found
    assert found["samples"] == found["expected_samples"] and found["version"] == found["pushes"]

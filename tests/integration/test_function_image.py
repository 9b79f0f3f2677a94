"""The function image's Python, built for real without docker: the core alone, as the Dockerfile installs it.

The build folders are laid out by the real `faas-cli build --shrinkwrap` when it is found (else as
faas-cli does, by faasgd.local.replicas.build). Then:
  * a fresh venv (no system site-packages) gets what the image gets: the template's requirements.txt,
    the function's requirements.txt and the core shipped by `configuration.copy` (pyproject.toml +
    src, installed with no extras). None of the other wings' libraries is importable there, and
    index.py serves a tiny job on a real redis-server with it: emnist-train trains a worker,
    emnist-setup a whole single-mode job;
  * the template's test stage (the Dockerfile's TEST_COMMAND: flake8, then pytest, with the test-tools stage's
    folder on PYTHONPATH) passes in each function folder, running the function's own handler_test.py. It runs
    as in the image: `pip install --user` into HOME=build/<fn> (the image's /home/app) with a plain interpreter,
    the tools `pip install --target` a folder of their own.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import time

import httpx
import pytest

from faasgd.config import load_config
from faasgd.functions import orchestrate
from faasgd.local.services.stores import free_port
from faasgd.store import open_store
from support.function_image import FUNCTIONS, NO_COMPILE, build_image, run
from support.paths import ROOT

pytestmark = pytest.mark.integration

OTHER_WINGS = ("yaml", "matplotlib", "starlette", "uvicorn", "psutil", "rich", "fakeredis",
               "pytest_timeout")  # prometheus_client and threadpoolctl are the core's
TINY = {"dataset": "synthetic", "train_samples": 600, "test_samples": 200, "hidden_sizes": [8], "batch_size": 50,
        "max_epochs": 2, "target_accuracy": 1.0}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(venv python, build folder) after the Dockerfile's steps."""
    return build_image(tmp_path_factory.mktemp("image"))


def test_the_core_installs_without_any_other_wings_library(image):
    python, _ = image
    probe = ("import importlib.util, faasgd.functions.emnist_setup, faasgd.functions.emnist_train\n"
             f"print([m for m in {OTHER_WINGS!r} if importlib.util.find_spec(m)])")
    assert run([python, "-c", probe]).stdout.strip() == "[]"
    for wing in ("faasgd.local.replicas.stack", "faasgd.cli.progress", "faasgd.batch.matrix"):  # shipped, not runnable
        assert subprocess.run([python, "-c", f"import {wing}"], capture_output=True).returncode != 0


DOCKERFILE = ROOT / "template" / "python3-http-faasgd" / "Dockerfile"


def stage_command() -> tuple[str, str]:
    """(the test stage's default TEST_COMMAND, the test-tools stage's pip requirements) as the Dockerfile has them."""
    dockerfile = DOCKERFILE.read_text()
    command = re.search(r'^ARG TEST_COMMAND="(.*)"$', dockerfile, re.M)
    tools = re.search(r'^RUN pip install --no-cache-dir --target /opt/test-tools (.*)$', dockerfile, re.M)
    assert command and tools, "the test stage's TEST_COMMAND or the test-tools stage's install is gone"
    return command.group(1), tools.group(1)


def test_the_dockerfile_test_stage_runs_flake8_and_pytest_in_the_function_folder():
    """The Dockerfile's test stage runs flake8 and pytest (TEST_COMMAND) in the function folder, the tools from a
    stage of their own that no function's code precedes (so every function's build reuses it)."""
    dockerfile = DOCKERFILE.read_text()
    command, _ = stage_command()
    assert "flake8" in command and "pytest" in command and "tox" not in command
    assert "WORKDIR /home/app/function/" in dockerfile
    stage = dockerfile.split("AS test-tools", 1)[1].split("\nFROM ", 1)[0]
    tools = [line for line in stage.splitlines() if line.strip() and not line.startswith("#")]
    assert tools and not [line for line in tools if "function" in line or line.startswith(("COPY", "ADD"))]
    assert "COPY --from=test-tools /opt/test-tools /opt/test-tools" in dockerfile


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_template_test_stage_runs_the_functions_own_tests(image, function, tmp_path):
    _, build = image
    home = build / function  # /home/app in the image; the function folder is /home/app/function
    command, tools = stage_command()
    env = container_env(HOME=str(home))
    python = str(pathlib.Path(sys.base_prefix) / "bin" / "python3")  # a plain interpreter, as the image's
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", NO_COMPILE]
    run([*pip, "--user", "-r", str(home / "function" / "requirements.txt"), str(home / "core")], env=env)
    run([*pip, "--target", str(tmp_path / "test-tools"), *(word.strip('"') for word in tools.split('" "'))], env=env)
    done = run(["sh", "-c", command.replace("python ", f"{python} ")], cwd=home / "function",
               env={**env, "PYTHONPATH": str(tmp_path / "test-tools")})
    tests = re.search(r"(\d+) passed", done.stdout)
    assert tests and int(tests.group(1)) >= 4, done.stdout[-2000:]
    assert "skipped" not in done.stdout  # not the template's example tests, which skip other handlers


def container_env(**extra) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "healthcheck_interval": "1s",
            **extra}  # the watchdog's drain window after SIGTERM (index.py keeps to it): short here


def serve(python: str, folder: pathlib.Path, env: dict) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([python, "index.py"], cwd=folder, env=container_env(upstream_url=f"http://127.0.0.1:{port}", **env),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/", timeout=1)
            return process, url
        except httpx.TransportError:
            assert process.poll() is None, process.stderr.read()[-2000:]
            time.sleep(0.1)
    process.kill()
    raise AssertionError("index.py did not listen within 30 s")


def test_index_py_serves_a_tiny_job_with_the_core_alone(image, redis_server):
    python, build = image
    store = open_store(redis_server.url)
    config = load_config({}, {**TINY, "number_of_workers": 1, "store_url": redis_server.url})
    job_id = orchestrate.create_job(store, config)
    train, train_url = serve(python, build / "emnist-train", {"store_url": redis_server.url})
    setup, setup_url = serve(python, build / "emnist-setup", {"store_url": redis_server.url})
    try:
        answer = httpx.post(train_url + "/", json={"job_id": job_id, "worker_id": 0}, timeout=120)
        assert answer.status_code == 200, answer.text
        assert answer.json()["state"] == "finished" and answer.json()["duplicate"] is False
        assert store.get_record(job_id, "result")["samples"] == 2 * 540
        single = httpx.post(setup_url + "/", json={**TINY, "invocation_mode": "single"}, timeout=120)
        assert single.status_code == 200, single.text
        assert single.json()["result"]["state"] == "done" and single.json()["result"]["samples"] == 2 * 540
        bad = httpx.post(setup_url + "/", json={"batch_size": 0}, timeout=30)
        assert bad.status_code == 400 and bad.json()["field"] == "batch_size"
    finally:
        for process in (train, setup):
            process.terminate()
            process.wait(10)
    assert "epoch 2" in train.stderr.read()  # the worker's events are in the function's log

"""The function image's Python, built for real without docker: the core alone, as the Dockerfile installs it.

The build folders are laid out by the real `faas-cli build --shrinkwrap` when it is found (else as
faas-cli does, by faasgd.local.build). Then:
  * a fresh venv (no system site-packages) gets what the image gets: the template's requirements.txt,
    the function's requirements.txt and the core shipped by `configuration.copy` (pyproject.toml +
    src, installed with no extras). None of the other wings' libraries is importable there, and
    index.py serves a tiny job on a real redis-server with it: emnist-train trains a worker,
    emnist-setup a whole single-mode job;
  * the template's test stage (`tox`, the Dockerfile's TEST_COMMAND) passes in each function folder,
    running the function's own handler_test.py. It runs as in the image: `pip install --user` into
    HOME=build/<fn> (the image's /home/app) with a plain interpreter, because tox's `sitepackages`
    sees the base interpreter's site, which a venv cannot stand in for.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import httpx
import pytest

from faasgd.config import load_config
from faasgd.functions import orchestrate
from faasgd.local.stores import free_port
from faasgd.store import open_store
from support import openfaas_bin

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
FUNCTIONS = ("emnist-setup", "emnist-train")
OTHER_WINGS = ("yaml", "matplotlib", "starlette", "uvicorn", "prometheus_client", "psutil", "rich", "threadpoolctl",
               "fakeredis", "pytest_timeout")
TINY = {"dataset": "synthetic", "train_samples": 600, "test_samples": 200, "hidden_sizes": [8], "batch_size": 50,
        "max_epochs": 2, "target_accuracy": 1.0}


def run(argv, cwd=None, env=None, timeout=600) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def shrinkwrap(tmp: pathlib.Path) -> pathlib.Path:
    """build/<fn>/ for both functions, from a clean copy of the project (as `faas-cli build` sees it)."""
    project = tmp / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", ".faasgd", "build", "results",
                                                                 "__pycache__", "*.egg-info", ".pytest_cache"))
    faas_cli = openfaas_bin.find("faas-cli")
    if faas_cli:
        run([faas_cli, "build", "--shrinkwrap", "-f", "stack.yml"], cwd=project,
            env={"HOME": str(tmp), "PATH": os.environ["PATH"]})
    else:  # the same layout by our reader of faas-cli's rules
        from faasgd.local.build import build_function
        from faasgd.local.stack import load_stack

        for spec in load_stack(project / "stack.yml", {}).values():
            target = build_function(spec, project / "template", project / "build")
            for path in ("pyproject.toml", "src"):
                copy = shutil.copytree if (project / path).is_dir() else shutil.copy
                copy(project / path, target / "function" / path)
    return project / "build"


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(venv python, build folder) after the Dockerfile's steps."""
    tmp = tmp_path_factory.mktemp("image")
    build = shrinkwrap(tmp)
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    first = build / FUNCTIONS[0]
    run([*pip, "-r", str(first / "requirements.txt")])  # the shim's: flask, waitress
    for fn in FUNCTIONS:
        function, core = build / fn / "function", build / fn / "core"
        run([*pip, "-r", str(function / "requirements.txt")])
        assert (function / "pyproject.toml").is_file() and (function / "src").is_dir()  # configuration.copy
        core.mkdir()  # the Dockerfile moves the core out of the function folder, then installs it
        shutil.move(function / "src", core / "src")
        shutil.move(function / "pyproject.toml", core / "pyproject.toml")
        (function / "__init__.py").touch()  # the Dockerfile's `touch ./function/__init__.py`
    run([*pip, str(build / FUNCTIONS[0] / "core")])  # `pip install /tmp/faasgd-core`: no extras
    return python, build


def test_the_core_installs_without_any_other_wings_library(image):
    python, _ = image
    probe = ("import importlib.util, faasgd.functions.emnist_setup, faasgd.functions.emnist_train\n"
             f"print([m for m in {OTHER_WINGS!r} if importlib.util.find_spec(m)])")
    assert run([python, "-c", probe]).stdout.strip() == "[]"
    for wing in ("faasgd.local.stack", "faasgd.cli.progress", "faasgd.batch.matrix"):  # shipped, not runnable
        assert subprocess.run([python, "-c", f"import {wing}"], capture_output=True).returncode != 0


def test_the_dockerfile_test_stage_runs_tox_in_the_function_folder():
    """The Dockerfile's test stage runs `tox` (TEST_COMMAND) in the function folder."""
    dockerfile = (ROOT / "template" / "python3-http-faasgd" / "Dockerfile").read_text()
    assert re.search(r"^ARG TEST_COMMAND=tox$", dockerfile, re.M)
    assert "WORKDIR /home/app/function/" in dockerfile


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_template_test_stage_runs_the_functions_own_tests(image, function):
    _, build = image
    home = build / function  # /home/app in the image; the function folder is /home/app/function
    env = container_env(HOME=str(home))
    python = str(pathlib.Path(sys.base_prefix) / "bin" / "python3")  # a plain interpreter, as the image's
    pip = [python, "-m", "pip", "install", "-q", "--user", "--disable-pip-version-check"]
    run([*pip, "-r", str(home / "function" / "requirements.txt"), str(home / "core"), "tox==3.*"], env=env)
    done = run([str(home / ".local" / "bin" / "tox")], cwd=home / "function", env=env)
    tests = re.search(r"(\d+) passed", done.stdout)
    assert tests and int(tests.group(1)) >= 4, done.stdout[-2000:]
    assert "skipped" not in done.stdout  # not the template's example tests, which skip other handlers


def container_env(**extra) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", **extra}


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
        assert store.get_record(job_id, "result")["samples"] == 2 * 600
        single = httpx.post(setup_url + "/", json={**TINY, "invocation_mode": "single"}, timeout=120)
        assert single.status_code == 200, single.text
        assert single.json()["result"]["state"] == "done" and single.json()["result"]["samples"] == 2 * 600
        bad = httpx.post(setup_url + "/", json={"batch_size": 0}, timeout=30)
        assert bad.status_code == 400 and bad.json()["field"] == "batch_size"
    finally:
        for process in (train, setup):
            process.terminate()
            process.wait(10)
    assert "epoch 2" in train.stderr.read()  # the worker's events are in the function's log

"""The README's Deploy section met in the wrong order: `faasgd up --backend docker` prints the exact export line,
and a `faasgd train` before the images are there says what is missing and the next command (not only "function not
found"): `faas-cli up` when the images were never pushed, `faas-cli deploy` when the runtime's registry holds them
under its own address because REGISTRY was exported after `faasgd up` rather than before.

127.0.0.1:5000 (stack.yml's default registry) is held by a listener that closes every connection while the test
runs, so the runtime's registry takes another port, as on a machine where 5000 is taken, and a pull from 5000 fails
at once.
No function image is built: a stand-in of emnist-setup's name is pushed to the runtime's registry on loopback.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from faasgd.local.services import docker_cli
from faasgd.local.services.stores import free_port
from faasgd.testing.fault_matrix import Runtime, faasgd
from support.docker_ready import images_missing
from support.paths import copy_project

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(300)]
PROJECT = ("stack.yml", "template", "emnist-setup", "emnist-train", "pyproject.toml", "src")
STAND_IN = "python:3.11-slim-bookworm"  # the template's base image: what is pushed under emnist-setup's name
TAG = "deploy-steps-test"
TRAIN = ("train", "--workers", "1", "--dataset", "synthetic", "--train-samples", "500", "--timeout", "30")


def skip_reason() -> str | None:
    return images_missing([STAND_IN])


@pytest.fixture
def port_5000_taken():
    """127.0.0.1:5000 taken while the test runs: a listener that closes every connection at once (a pull from it
    fails at once). SO_REUSEADDR, so a registry's connections still in TIME_WAIT there do not keep it from binding;
    when another listener has the port, that one takes it."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind(("127.0.0.1", 5000))
        holder.listen(16)
    except OSError:
        holder.close()
        yield
        return

    def refuse() -> None:
        while True:
            try:
                connection, _ = holder.accept()
            except OSError:
                return  # closed: the test is over
            connection.close()
    thread = threading.Thread(target=refuse, daemon=True)
    thread.start()
    try:
        yield
    finally:
        holder.shutdown(socket.SHUT_RDWR)
        holder.close()
        thread.join(5)


def project(folder: Path) -> Path:
    copy_project(folder, PROJECT)
    stack = yaml.safe_load((folder / "stack.yml").read_text())
    stack["functions"] = {name: stack["functions"][name] for name in ("emnist-setup", "emnist-train")}
    (folder / "stack.yml").write_text(yaml.safe_dump(stack, sort_keys=False))
    return folder


def up(runtime: Runtime) -> subprocess.CompletedProcess:
    """`faasgd up --backend docker` as a user runs it after `faasgd down`: REGISTRY not exported."""
    environ = {k: v for k, v in os.environ.items() if k != "REGISTRY"}
    done = subprocess.run([sys.executable, "-m", "faasgd.cli", "up", "--port", str(runtime.port), "--dir", str(runtime.directory),
                           "--backend", "docker"], capture_output=True, text=True, cwd=runtime.project, timeout=120,
                          env={**environ, "TAG": TAG})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def registry_of(runtime: Runtime) -> str:
    return json.loads((runtime.directory / "state.json").read_text())["registry"]["url"]


def test_up_prints_the_export_line_and_train_says_what_is_missing_and_the_next_command(port_5000_taken, tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    (tmp_path / "project").mkdir()
    runtime = Runtime(project(tmp_path / "project"), tmp_path / ".faasgd", free_port())
    pushed = None
    try:
        started = up(runtime)
        registry = registry_of(runtime)
        assert registry != "127.0.0.1:5000"
        lines = started.stdout.splitlines()
        assert f"  export REGISTRY={registry}" in lines and "  faas-cli up -f stack.yml --filter 'emnist-*'" in lines
        assert f"waiting for their images: emnist-setup (127.0.0.1:5000/emnist-setup:{TAG})" in started.stdout
        never_pushed = faasgd(runtime.project, *TRAIN, "--dir", str(runtime.directory))
        assert never_pushed.returncode != 0
        assert "emnist-setup is not deployed on the local runtime (--backend docker): its image " \
               f"127.0.0.1:5000/emnist-setup:{TAG} is neither on this machine nor in the runtime's registry" \
               in never_pushed.stderr, never_pushed.stderr
        assert f"next: export REGISTRY={registry} && faas-cli up -f stack.yml --filter 'emnist-*'" in never_pushed.stderr

        # pushed with REGISTRY exported, then `faasgd down` and `faasgd up` without it: the names no longer meet
        pushed = [f"{registry}/{name}:{TAG}" for name in ("emnist-setup", "emnist-train")]
        for image in pushed:
            docker_cli.docker("tag", STAND_IN, image)
            docker_cli.docker("push", image, timeout=300)
        runtime.stop()
        again = up(runtime)
        assert registry_of(runtime) == registry  # the port it had, for the names pushed there
        assert again.stdout.splitlines()[-2:] == [f"  export REGISTRY={registry}",
                                                  "  faas-cli deploy -f stack.yml --filter 'emnist-*'"]
        exported_late = faasgd(runtime.project, *TRAIN, "--dir", str(runtime.directory))
        assert exported_late.returncode != 0
        assert f"the runtime's registry holds {pushed[0]} (REGISTRY was exported after `faasgd up`, not before)" \
               in exported_late.stderr, exported_late.stderr
        assert f"next: export REGISTRY={registry} && faas-cli deploy -f stack.yml --filter 'emnist-*'" \
               in exported_late.stderr
    finally:
        runtime.stop()
        for image in pushed or []:
            docker_cli.docker("rmi", image, check=False)

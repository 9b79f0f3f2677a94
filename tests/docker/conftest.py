"""The `docker` tier: the function images built and pushed by the real faas-cli (`faas-cli up`) to the
registry of a `faasgd up --backend docker`, and run there as containers.

One runtime for the package (`deployed`): a copy of the project (faas-cli writes ./build there) whose
stack.yml keeps emnist-setup and emnist-train with a 1 s drain, `faasgd up --backend docker` on it, then
`REGISTRY=127.0.0.1:<its registry> TAG=docker-test` and the README's `faas-cli up` line. Skipped with a one-line
reason when no Docker daemon answers, faas-cli is missing or the base images are not on this machine
(scripts/local-base-images.sh makes them where no registry is reachable); the daemon never pulls from
anywhere but the runtime's own registry. Teardown: `faasgd down` (containers and network, by the runtime's
label) and the two images this package tagged.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from faasgd.local.lifecycle import credentials
from faasgd.local.services import docker_cli
from faasgd.local.services.stores import free_port
from faasgd.testing.fault_matrix import RUNTIME_FLAGS, Runtime
from support.container_faults import wait_available
from support.openfaas_bin import find, missing_reason
from support.docker_ready import images_missing
from support.paths import ROOT, copy_project

FUNCTIONS = ("emnist-setup", "emnist-train")
PROJECT = ("stack.yml", "template", *FUNCTIONS, "pyproject.toml", "src")  # what faas-cli build reads
TAG = "docker-test"  # the tag of this package's images: removed at the end
PYTHON_VERSION = "3.11"  # the template's default, and the stand-in base image's (scripts/local-base-images.sh)
BASE_IMAGES = (f"python:{PYTHON_VERSION}-slim-bookworm", "ghcr.io/openfaas/of-watchdog:0.11.3")
BUILD_TIMEOUT_S = 900


def skip_reason() -> str | None:
    """Why the docker tier cannot run here, in one line; None when it can."""
    if find("faas-cli") is None:
        return missing_reason("faas-cli")
    return images_missing(BASE_IMAGES)


def documented_up() -> list[str]:
    """The `faas-cli up` line of the README's Deploy section, as faas-cli's arguments (the test runs exactly it,
    plus a build argument that skips the template's test stage, which the integration tier runs)."""
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("faas-cli up ")]
    assert len(lines) == 1, lines
    return shlex.split(re.sub(r"\s{2,}#.*$", "", lines[0]))[1:]


def project_copy(folder: Path) -> Path:
    """The project's files faas-cli reads, and a stack.yml of emnist-setup and emnist-train draining for 1 s."""
    copy_project(folder, PROJECT)
    stack = yaml.safe_load((folder / "stack.yml").read_text())
    stack["functions"] = {name: stack["functions"][name] for name in FUNCTIONS}
    for spec in stack["functions"].values():
        spec["environment"] = {**spec["environment"], "healthcheck_interval": "1s"}
    (folder / "stack.yml").write_text(yaml.safe_dump(stack, sort_keys=False))
    return folder


class FaasCli:
    """The real faas-cli run in the project copy, HOME in a temporary folder, OPENFAAS_URL at the runtime."""

    def __init__(self, binary: str, project: Path, home: Path, runtime: Runtime):
        self.binary, self.project, self.home, self.runtime = binary, project, home, runtime

    def __call__(self, *args: str, env: dict | None = None, stdin: str | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess:
        environment = {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                       "OPENFAAS_URL": self.runtime.state["gateway_url"], **(env or {})}
        return subprocess.run([self.binary, *args], input=stdin, capture_output=True, text=True,
                              cwd=self.project, env=environment, timeout=timeout)


@pytest.fixture(scope="package")
def deployed(tmp_path_factory):
    """The runtime after `faas-cli up`: {runtime, faas_cli, registry, up (faas-cli's output), seconds}."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    started, built_after = time.monotonic(), datetime.now(timezone.utc)
    project = project_copy(tmp_path_factory.mktemp("docker-project"))
    folder = tmp_path_factory.mktemp("docker-runtime")
    os.environ["TAG"] = TAG  # the stack's images as `faasgd up` reads them: absent, so nothing runs before the deploy
    try:
        runtime = Runtime(project, folder / ".faasgd", free_port(), (*RUNTIME_FLAGS, "--backend", "docker")).up()
    finally:
        del os.environ["TAG"]
    registry = runtime.state["registry"]["url"]
    images = [f"{registry}/{name}:{TAG}" for name in FUNCTIONS]
    faas_cli = FaasCli(find("faas-cli"), project, tmp_path_factory.mktemp("home"), runtime)
    try:
        login = faas_cli("login", "-u", "admin", "--password-stdin",
                         stdin=credentials.read(runtime.directory / "secrets")[1])
        assert login.returncode == 0, login.stdout + login.stderr
        # TEST_ENABLED=false: the template's test stage (tox: flake8 and the handlers' tests, fresh venvs from PyPI)
        # runs in the integration tier (test_function_image.py); here it would only add its minutes to the build
        up = faas_cli(*documented_up(), "--build-arg", "TEST_ENABLED=false", env={"REGISTRY": registry, "TAG": TAG},
                      timeout=BUILD_TIMEOUT_S)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        wait_available(runtime)
        yield {"runtime": runtime, "faas_cli": faas_cli, "registry": registry, "images": images,
               "up": up.stdout + up.stderr, "seconds": time.monotonic() - started}
    finally:
        runtime.stop()
        leftovers = build_leftovers(images, built_after)
        docker_cli.docker("rmi", *images, *leftovers, check=False)


def created(image: str) -> datetime:
    return datetime.fromisoformat((docker_cli.inspect("image", image) or {})["Created"][:26].rstrip("Z") + "+00:00")


def build_leftovers(images: list[str], after: datetime) -> list[str]:
    """The untagged images the classic builder left of these builds: each `test` stage (`ship` copies one file
    from it), found as a dangling image made by this build that shares an image made by it with `images`."""
    ours = {step for image in images for step in docker_cli.docker("history", "-q", image, check=False).split()
            if step != "<missing>" and created(step) > after}
    dangling = docker_cli.docker("images", "-q", "--filter", "dangling=true").split()
    return [image for image in dangling if created(image) > after
            and ours & set(docker_cli.docker("history", "-q", image, check=False).split())]

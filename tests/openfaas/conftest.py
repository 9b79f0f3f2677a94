"""The `openfaas` tier: OpenFaaS's own binaries (../shared/bin, tests/support/openfaas_bin.py) against
a real `faasgd up` on a free loopback port in a temporary folder.

`runtime` (one per package) is that runtime; `faas_cli` runs the real faas-cli with HOME in a
temporary folder (its logins live in $HOME/.openfaas), OPENFAAS_URL at the runtime, and a copy of
the project as its working folder (`faas-cli up` writes ./build there, not in the repository).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faasgd.local.lifecycle import credentials
from faasgd.openfaas import GatewayClient
from support.openfaas_bin import find, missing_reason
from support.paths import ROOT, copy_project

PROJECT = ("stack.yml", "template", "emnist-setup", "emnist-train", "stacking-driver", "stacking-trainer", "stacking-reducer",
           "stacking-metatrainer", "pyproject.toml", "src")  # faas-cli build's inputs


@pytest.fixture(scope="package")
def faas_cli_path() -> str:
    path = find("faas-cli")
    if path is None:
        pytest.skip(missing_reason("faas-cli"))
    return path


@pytest.fixture(scope="package")
def runtime(tmp_path_factory, faas_cli_path):
    """A `faasgd up` (port 0) in a temporary folder: state, dir, url, password, an authenticated client."""
    directory = tmp_path_factory.mktemp("openfaas-runtime") / ".faasgd"
    started = subprocess.run([sys.executable, "-m", "faasgd.cli", "up", "--port", "0", "--dir", str(directory), "--wait"],
                             capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert started.returncode == 0, started.stdout + started.stderr
    state = json.loads((directory / "state.json").read_text())
    assert not state["gateway_url"].endswith(":0") and f"gateway {state['gateway_url']}" in started.stdout  # port 0
    login = credentials.read(directory / "secrets")
    yield {"state": state, "dir": directory, "url": state["gateway_url"], "password": login[1],
           "up": started.stdout, "gateway": GatewayClient(state["gateway_url"], 60, auth=login)}
    subprocess.run([sys.executable, "-m", "faasgd.cli", "down", "--dir", str(directory)], cwd=ROOT, timeout=60)


@pytest.fixture(scope="package")
def project(tmp_path_factory) -> Path:
    """A copy of what faas-cli reads of the project (stack, template, handlers, the core)."""
    folder = tmp_path_factory.mktemp("project")
    copy_project(folder, PROJECT)
    return folder


@pytest.fixture(scope="package")
def faas_cli(faas_cli_path, runtime, project, tmp_path_factory):
    """Run the real faas-cli logged in to the runtime; returns a function like subprocess.run."""
    home = tmp_path_factory.mktemp("home")

    def run(*args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 120,
            env: dict | None = None) -> subprocess.CompletedProcess:
        environment = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                       "OPENFAAS_URL": runtime["url"], **(env or {})}
        return subprocess.run([faas_cli_path, *args], input=stdin, capture_output=True, text=True,
                              cwd=cwd or project, env=environment, timeout=timeout)

    logged_in = run("login", "--gateway", runtime["url"], "-u", "admin", "--password-stdin", stdin=runtime["password"])
    assert logged_in.returncode == 0, logged_in.stdout + logged_in.stderr
    run.home = home
    return run

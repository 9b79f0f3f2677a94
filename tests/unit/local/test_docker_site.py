"""The container backend's runtime side without a daemon: `up --backend docker` refused when no Docker daemon
answers, `down` removing by the runtime's label (containers and network of that runtime only) and stopping its
registry, the registry's configuration, and the catalog that accepts every image. `docker` is replaced."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from faasgd.errors import ConfigError
from faasgd.local.api import Refused
from faasgd.local.lifecycle import control, daemon
from faasgd.local.replicas.deployments import Catalog, Code
from faasgd.local.replicas.stack import load_stack
from faasgd.local.services import docker_cli, docker_site, docker_wall
from faasgd.local.lifecycle.options import UpOptions
from support.paths import ROOT

T0 = 1_700_000_000.0


def no_daemon(*args, **_):
    raise docker_cli.DockerError("docker version: Cannot connect to the Docker daemon at unix:///var/run/docker.sock")


def a_stack(tmp_path: Path) -> str:
    stack = tmp_path / "stack.yml"
    stack.write_text("version: 1.0\n")
    return str(stack)


def test_up_with_the_docker_backend_is_refused_at_once_when_no_daemon_answers(monkeypatch, tmp_path):
    monkeypatch.setattr(docker_cli, "docker", no_daemon)
    monkeypatch.setattr(control.subprocess, "Popen", lambda *a, **k: pytest.fail("a daemon was started"))
    with pytest.raises(docker_cli.DockerError, match="backend docker: no Docker daemon answers"):
        control.up(UpOptions(a_stack(tmp_path), 0, tmp_path / ".faasgd", backend="docker"))
    assert not (tmp_path / ".faasgd" / daemon.STATE_FILE).exists()


def test_an_unknown_backend_names_the_flag(tmp_path):
    with pytest.raises(ConfigError, match="--backend"):
        control.up(UpOptions(a_stack(tmp_path), 0, tmp_path / ".faasgd", backend="podman"))


def test_the_backend_reaches_the_daemons_command_line(monkeypatch, tmp_path):
    started = []

    def popen(argv, **_):
        started.append(argv)
        raise RuntimeError("nothing is started")

    monkeypatch.setattr(docker_cli, "docker", lambda *a, **k: "20.10.24")
    monkeypatch.setattr(control.subprocess, "Popen", popen)
    with pytest.raises(RuntimeError):
        control.up(UpOptions(a_stack(tmp_path), 0, tmp_path / ".faasgd", backend="docker", watchdog="off"))  # no version call
    assert daemon.parse_args(started[0][3:]).backend == "docker"
    assert daemon.parse_args(["--stack", "s", "--dir", "d"]).backend == "process"  # the default


def test_down_removes_what_carries_the_runtimes_label_and_stops_its_registry(table, monkeypatch, tmp_path):
    calls, walls = [], []
    monkeypatch.setattr(docker_cli, "docker", lambda *args, **_: calls.append(args) or "")
    monkeypatch.setattr(docker_wall, "open_up", walls.append)
    registry = table.add(401, T0 + 1)
    (tmp_path / daemon.STATE_FILE).write_text(json.dumps({
        "pid": 400, "create_time": T0, "backend": "docker", "runtime_id": "abc123", "stores": {},
        "registry": {"url": "127.0.0.1:5000", "pid": 401, "create_time": T0 + 1},
        "replicas": [{"name": "emnist-train-1", "container": "c0ffee", "url": "172.30.0.2:8080"}]}))
    assert control.down(tmp_path) == [401] and registry.signals == [signal.SIGTERM]
    assert ("container", "ls", "-a", "-q", "--filter", "label=faasgd.runtime=abc123") in calls
    assert ("network", "ls", "-q", "--filter", "label=faasgd.runtime=abc123") in calls
    assert all("label=faasgd.runtime=abc123" in call for call in calls if "--filter" in call)
    assert walls == ["abc123"]  # a killed daemon's wall comes down with the rest


def test_down_of_a_process_runtime_asks_no_docker(table, monkeypatch, tmp_path):
    monkeypatch.setattr(docker_cli, "docker", lambda *a, **k: pytest.fail("docker was called"))
    (tmp_path / daemon.STATE_FILE).write_text(json.dumps({"pid": 400, "create_time": T0, "replicas": []}))
    assert control.down(tmp_path) == []


def test_the_registry_listens_on_loopback_and_keeps_its_files_in_the_runtime_folder(tmp_path):
    config = docker_site.registry_config(5123, tmp_path / "registry" / "data")
    assert "addr: 127.0.0.1:5123" in config and f"rootdirectory: {tmp_path / 'registry' / 'data'}" in config
    (tmp_path / "config.yml").write_text(config)
    assert docker_site.previous_port(tmp_path / "config.yml") == 5123  # the next runtime tries this port first
    assert docker_site.previous_port(tmp_path / "none.yml") is None


def test_a_runtime_id_is_one_per_folder(tmp_path):
    first, again, other = (docker_site.runtime_id(p) for p in (tmp_path / "a", tmp_path / "a", tmp_path / "b"))
    assert first == again != other and len(first) == 10


def test_every_image_deploys_a_local_registrys_is_pulled_others_must_be_here(monkeypatch):
    pulled = []

    def ensure(image):
        if image.startswith("127.0.0.1:"):
            pulled.append(image)
        elif image != "ghcr.io/faasgd/emnist-train:0.1.0":
            raise docker_cli.DockerError(f"image: {image} is not on this machine")

    monkeypatch.setattr(docker_cli, "ensure_image", ensure)
    spec = load_stack(ROOT / "stack.yml", {"REGISTRY": "ghcr.io/faasgd"})["emnist-train"]  # a registry elsewhere
    catalog = docker_site.ImageCatalog([Code(spec, Path("build/emnist-train"), {})])
    assert catalog.code_for("ghcr.io/faasgd/emnist-train:0.1.0").spec is spec
    assert catalog.code_for("127.0.0.1:5000/other:1").spec.image == "127.0.0.1:5000/other:1"
    assert pulled == ["127.0.0.1:5000/other:1"]
    with pytest.raises(Refused) as refused:
        catalog.code_for("docker.io/library/nginx:1")
    assert refused.value.http_status == 400 and "docker.io/library/nginx:1" in str(refused.value)
    with pytest.raises(Refused, match="not built by this runtime"):  # the process backend's catalog: unchanged
        Catalog([Code(spec, Path("b"), {})]).code_for("127.0.0.1:5000/other:1")

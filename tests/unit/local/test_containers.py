"""A replica as a container: the `docker run` flags faas-netes' pod spec turns into, the quantities of its
limits, and which images may be pulled. In-process: no Docker daemon is asked (`docker` is replaced)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from faasgd.errors import ConfigError
from faasgd.local.replicas import containers
from faasgd.local.replicas.containers import Network, resource_flags, run_argv
from faasgd.local.replicas.deployments import Code, Deployment
from faasgd.local.replicas.pods import Host
from faasgd.local.replicas.quantities import cpu_cores, memory_bytes
from faasgd.local.replicas.stack import load_stack
from faasgd.local.services import dns, docker_cli
from faasgd.local.services.secrets import SecretStore
from support.paths import ROOT

NETWORK = Network("faasgd-abc", "172.30.0.1", "abc")
TABLE = dns.addresses({"gateway": "172.30.0.1:9000", "redis": "172.30.0.1:6400", "memcached": "172.30.0.1:6500"})


def deployment(**changes) -> Deployment:
    spec = dataclasses.replace(load_stack(ROOT / "stack.yml", {})["emnist-train"], env_process="python index.py",
                               **changes)
    return Deployment(spec, Code(spec, Path("."), {}), 0.0)


def flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == flag]


def test_the_pod_specs_environment_labels_secrets_and_limits_become_run_flags(tmp_path):
    argv = run_argv(deployment(), "emnist-train-3", NETWORK, TABLE, tmp_path / "secrets")
    assert argv[-1] == "127.0.0.1:5000/emnist-train:0.1.0"  # the image, last; nothing after it overrides CMD
    assert flag_values(argv, "--name") == ["faasgd-abc-emnist-train-3"]
    assert flag_values(argv, "--hostname") == ["emnist-train-3"] and flag_values(argv, "--network") == ["faasgd-abc"]
    env = dict(pair.split("=", 1) for pair in flag_values(argv, "--env"))
    assert env["fprocess"] == "python index.py"  # faas-netes sets it from envProcess
    assert env["store_url"] == "redis://172.30.0.1:6400/0"  # Service addresses: where the network finds them
    assert env["gateway_url"] == "http://172.30.0.1:9000"
    assert env["local_store_url"] == "memcached://172.30.0.1:6500"
    assert "HOSTNAME" not in env and "FAASGD_SECRETS_DIR" not in env  # a pod reads /var/openfaas/secrets
    assert not {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} & set(env)  # index.py reads its --cpus itself
    labels = dict(pair.split("=", 1) for pair in flag_values(argv, "--label"))
    assert labels["faas_function"] == "emnist-train" and labels["com.openfaas.scale.max"] == "5"
    assert labels[containers.RUNTIME_LABEL] == "abc" and labels[containers.REPLICA_LABEL] == "emnist-train-3"
    assert flag_values(argv, "--volume") == [f"{tmp_path / 'secrets'}:/var/openfaas/secrets:ro"]
    assert "redis.openfaas-fn:172.30.0.1" in flag_values(argv, "--add-host")
    assert flag_values(argv, "--memory") == [str(1024 ** 3)] and flag_values(argv, "--cpus") == ["1"]
    assert flag_values(argv, "--memory-reservation") == [str(512 * 1024 ** 2)]
    assert flag_values(argv, "--cpu-shares") == ["512"]
    assert "--read-only" not in argv and "--user" not in argv  # the image's own user, as faas-netes leaves it


def test_a_read_only_root_gets_a_writable_tmp(tmp_path):
    argv = run_argv(deployment(read_only_root_filesystem=True), "f-1", NETWORK, {}, tmp_path)
    assert "--read-only" in argv and flag_values(argv, "--tmpfs") == ["/tmp:rw,mode=1777"]


@pytest.mark.parametrize("text, expected", [("1Gi", 1024 ** 3), ("512Mi", 512 * 1024 ** 2), ("1G", 10 ** 9),
                                            ("1000", 1000), ("1.5Ki", 1536)])
def test_memory_quantities(text, expected):
    assert memory_bytes(text, "limits.memory") == expected


@pytest.mark.parametrize("text, expected", [("1", 1.0), ("500m", 0.5), ("0.25", 0.25), ("2", 2.0)])
def test_cpu_quantities(text, expected):
    assert cpu_cores(text, "limits.cpu") == expected


@pytest.mark.parametrize("limits, field", [({"memory": "lots"}, "limits.memory"), ({"memory": "100m"}, "limits.memory"),
                                           ({"cpu": "1Gi"}, "limits.cpu"), ({"cpu": "0"}, "limits.cpu")])
def test_a_bad_quantity_names_its_field(limits, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        resource_flags(limits, {})


def test_no_limits_no_flags():
    assert resource_flags({}, {}) == []


def fake_docker(monkeypatch, present: set[str]) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []

    def docker(*args, timeout=0.0, check=True):
        calls.append(args)
        if args[:2] == ("image", "inspect"):
            return '[{"Id": "sha256:x"}]' if args[2] in present else "[]"
        return ""

    monkeypatch.setattr(docker_cli, "docker", docker)
    return calls


def test_an_image_of_the_local_registry_is_pulled_at_each_deploy(monkeypatch):
    calls = fake_docker(monkeypatch, present=set())
    docker_cli.ensure_image("127.0.0.1:5000/emnist-train:1")
    assert calls == [("pull", "--quiet", "127.0.0.1:5000/emnist-train:1")]


def test_any_other_image_must_be_here_and_is_never_pulled(monkeypatch):
    calls = fake_docker(monkeypatch, present={"ghcr.io/faasgd/emnist-train:0.1.0"})
    docker_cli.ensure_image("ghcr.io/faasgd/emnist-train:0.1.0")
    with pytest.raises(docker_cli.DockerError, match="image: docker.io/library/redis:7 is not on this machine"):
        docker_cli.ensure_image("docker.io/library/redis:7")
    assert not [call for call in calls if call[0] == "pull"]


def test_run_never_lets_the_daemon_pull(monkeypatch):
    calls = fake_docker(monkeypatch, present=set())
    docker_cli.run_detached(["--name", "x", "image:1"])
    assert calls == [("run", "-d", "--pull", "never", "--name", "x", "image:1")]


def test_a_container_that_cannot_start_is_a_dead_replica_whose_log_says_why(monkeypatch, tmp_path):
    def docker(*args, timeout=0.0, check=True):
        if args[0] == "run":
            raise docker_cli.DockerError("docker run: Error response from daemon: No such image: x:1")
        return ""

    monkeypatch.setattr(docker_cli, "docker", docker)
    (tmp_path / "logs").mkdir()
    host = Host(tmp_path, SecretStore(tmp_path / "secrets"), {}, {})
    replica = containers.start_container(deployment(), "emnist-train-1", host, NETWORK)
    assert not replica.alive() and not replica.check_health()  # supervision replaces it, as a crashed pod
    assert "emnist-train-1 did not start: docker run: Error response from daemon: No such image" in \
        (tmp_path / "logs" / "emnist-train-1.log").read_text()
    replica.stop()  # nothing to stop in Docker; its folder goes
    assert not (tmp_path / "replicas" / "emnist-train-1").exists()

"""Under `faasgd up --backend docker` the stores listen on the runtime network's gateway address; only that network
(and the host) reach it: a container on another Docker network, or on Docker's default bridge, is refused by
Redis, memcached and the gateway there, while one on the runtime's network is served (Redis asks it for the
password the runtime generated, the functions' secret store-password). The wall (faasgd.local.services.docker_wall) is
in the host's firewall only while the runtime runs: SIGTERM to the daemon takes it down, a killed daemon's is
taken down by `faasgd down`, and an `up` after a crash puts up exactly one.

The runtime's network and the other one are made here with addresses from 198.18.0.0/15 (RFC 2544's benchmarking
range), so every probe goes to a network of this test's. No function image runs (TAG names none): the stores are
the runtime's whatever the stack deploys. The probes are containers of the template's Python base image.
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import psutil
import pytest
import yaml

from faasgd.local.replicas.containers import RUNTIME_LABEL
from faasgd.local.services import docker_cli, docker_wall
from faasgd.local.services.docker_site import runtime_id
from faasgd.local.services.stores import free_port
from faasgd.testing.fault_matrix import Runtime
from support.docker_ready import images_missing
from support.paths import copy_project

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(300)]
PROBE_IMAGE = "python:3.11-slim-bookworm"  # the template's base image (scripts/local-base-images.sh where offline)
PROJECT = ("stack.yml", "template", "emnist-setup", "emnist-train", "pyproject.toml", "src")
TEST_LABEL = "faasgd-docker-test=store-wall"
# sends argv[3] (with \n as CRLF) to argv[1]:argv[2] and prints what came back, or why nothing did
PROBE = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3) as s:
        s.sendall(sys.argv[3].replace("\\\\n", "\\r\\n").encode())
        s.settimeout(3)
        print(s.recv(200).decode(errors="replace").replace("\\r\\n", " ").strip() or "closed")
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print(type(e).__name__)
"""


def project(folder: Path) -> Path:
    """The project's files the runtime reads, its stack.yml cut to emnist-setup and emnist-train."""
    copy_project(folder, PROJECT)
    stack = yaml.safe_load((folder / "stack.yml").read_text())
    stack["functions"] = {name: stack["functions"][name] for name in ("emnist-setup", "emnist-train")}
    (folder / "stack.yml").write_text(yaml.safe_dump(stack, sort_keys=False))
    return folder


def skip_reason() -> str | None:
    if reason := images_missing([PROBE_IMAGE]):
        return reason
    if os.geteuid() != 0:
        return "the wall is iptables rules: the runtime under --backend docker needs root"
    return None


def network_in_benchmark_range(name: str, first_octets: str, *labels: str) -> str:
    """Create a bridge network on a free /24 of `first_octets`.X (198.18 or 198.19); its name."""
    for _ in range(20):
        third = random.randint(0, 255)
        made = docker_cli.docker("network", "create", "--driver", "bridge", "--subnet", f"{first_octets}.{third}.0/24",
                                 "--gateway", f"{first_octets}.{third}.1",
                                 *[f"--label={label}" for label in labels], name, check=False)
        if made.strip():
            return name
    raise RuntimeError(f"no free /24 in {first_octets}.0.0/16 for {name}")


def probe(network: str, host: str, port: int, request: str) -> str:
    """What a container on `network` gets back from host:port after sending `request`."""
    return docker_cli.docker("run", "--rm", "--pull", "never", "--network", network, "--label", TEST_LABEL,
                             PROBE_IMAGE, "python3", "-c", PROBE, host, str(port), request, timeout=60).strip()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def jumps(identity: str) -> int:
    """The INPUT rules jumping to the runtime's chain."""
    listed = docker_wall.iptables("-S", "INPUT").stdout.splitlines()
    return sum(docker_wall.jumps_to(line.split(), docker_wall.chain_name(identity)) for line in listed)


@pytest.fixture(scope="module")
def walled(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    folder = project(tmp_path_factory.mktemp("wall-project"))
    directory = tmp_path_factory.mktemp("wall-runtime") / ".faasgd"
    identity = runtime_id(directory)
    # the runtime takes the network of its folder's id when it is there: this one, in the benchmarking range
    network_in_benchmark_range(f"faasgd-{identity}", "198.18", f"{RUNTIME_LABEL}={identity}")
    other = network_in_benchmark_range(f"faasgd-wall-other-{identity}", "198.19", TEST_LABEL)
    runtime = Runtime(folder, directory, free_port(), ("--backend", "docker"))
    try:
        up(runtime)
        yield {"runtime": runtime, "identity": identity, "other": other}
    finally:
        runtime.stop()
        docker_cli.remove_labelled(f"{RUNTIME_LABEL}={identity}")  # when `up` failed, `down` finds no state
        docker_cli.docker("network", "rm", other, check=False)


def up(runtime: Runtime) -> Runtime:
    """`faasgd up` with TAG naming no image on this machine: no replica starts, the stores do."""
    os.environ["TAG"] = "absent-store-wall"
    try:
        return runtime.up()
    finally:
        del os.environ["TAG"]


def gateway_address(runtime: Runtime) -> str:
    """The host's address on the runtime's network, where the stores listen beside 127.0.0.1."""
    return docker_cli.inspect("network", runtime.state["network"])["IPAM"]["Config"][0]["Gateway"]


def targets(runtime: Runtime) -> dict[str, tuple[int, str]]:
    stores = runtime.state["stores"]
    return {"redis": (port_of(stores["redis"]["url"]), "PING\\n"),
            "memcached": (port_of(stores["memcached"]["url"]), "version\\n"),
            "gateway": (port_of(runtime.state["gateway_url"]), "GET /healthz HTTP/1.0\\n\\n")}


def test_a_container_on_another_network_or_the_default_bridge_reaches_no_store(walled):
    runtime, address = walled["runtime"], gateway_address(walled["runtime"])
    assert address.startswith("198.18.")  # the network this test made, as the runtime found it
    answers = {(network, name): probe(network, address, port, request)
               for network in (walled["other"], "bridge") for name, (port, request) in targets(runtime).items()}
    assert all(answer == "refused" for answer in answers.values()), answers


def test_a_container_on_the_runtimes_network_is_served_and_redis_asks_for_the_password(walled):
    runtime = walled["runtime"]
    address = gateway_address(runtime)
    (redis_port, _), (memcached_port, version) = targets(runtime)["redis"], targets(runtime)["memcached"]
    password = (runtime.directory / "secrets" / "store-password").read_text().strip()
    network = runtime.state["network"]
    assert len(password) >= 32 and (runtime.directory / "secrets" / "store-password").stat().st_mode & 0o077 == 0
    assert probe(network, address, redis_port, "PING\\n").startswith("-NOAUTH")
    assert probe(network, address, redis_port, f"AUTH {password}\\nPING\\n").startswith("+OK")
    assert probe(network, address, redis_port, "AUTH wrong-password\\n").startswith("-WRONGPASS")
    assert probe(network, address, memcached_port, version).startswith("VERSION ")
    assert password not in (runtime.directory / "state.json").read_text()


def test_the_wall_is_one_rule_while_up_and_goes_with_the_runtime_at_sigterm_or_down_after_a_kill(walled, tmp_path):
    identity = walled["identity"]
    assert docker_wall.is_up(identity) and jumps(identity) == 1
    # a runtime of another folder, killed: its wall outlives it until `faasgd down`; an `up` after it puts up one
    (tmp_path / "project").mkdir()
    second = Runtime(project(tmp_path / "project"), tmp_path / ".faasgd", free_port(), ("--backend", "docker"))
    try:
        up(second)
        other_id = runtime_id(second.directory)
        assert jumps(other_id) == 1
        os.kill(second.state["pid"], signal.SIGKILL)
        psutil.Process(second.state["pid"]).wait(10)
        assert jumps(other_id) == 1  # nothing ran its `finally`
        up(second)  # the next `up` takes the crashed one's down before its own
        assert jumps(other_id) == 1 and docker_wall.is_up(other_id)
        daemon = psutil.Process(second.state["pid"])
        daemon.send_signal(signal.SIGTERM)  # the daemon's own stop takes it down
        daemon.wait(30)
        assert not docker_wall.is_up(other_id) and jumps(other_id) == 0
        up(second)
        os.kill(second.state["pid"], signal.SIGKILL)
        psutil.Process(second.state["pid"]).wait(10)
    finally:
        second.stop()  # `faasgd down`
    assert not docker_wall.is_up(other_id) and jumps(other_id) == 0
    assert docker_cli.listed("network", f"{RUNTIME_LABEL}={other_id}") == []
    assert docker_wall.is_up(identity)  # the first runtime's wall is its own

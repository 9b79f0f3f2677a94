"""Emulated nodes for containers: docs/how-to/emulated-nodes.md's container session, its lines as typed (`up` gets
`--port 0` and `--wait`, every line the test's `--dir`), with REGISTRY and TAG naming the images this package's
`faas-cli up` pushed, as the page says to export them. `faasgd status --json` names at least two nodes among the
replicas and puts the stores on one; each replica is a container on its node's Docker network; a 2-worker job
reaches 0.85 and its result counts each node's link; a container on another Docker network reaches no store;
`faasgd down` leaves no network, namespace, link or rule of the nodes behind. Root only."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from faasgd.local.nodes.docker_net import NODE_LABEL
from faasgd.local.nodes.links import names
from faasgd.local.services import docker_cli
from support.paths import ROOT

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(900),
              pytest.mark.skipif(os.geteuid() != 0, reason="emulated nodes need root (namespaces, links, qdiscs)")]

PAGE = ROOT / "docs" / "how-to" / "emulated-nodes.md"


def documented() -> dict[str, list[str]]:
    """The page's container block (the one whose `faasgd up` names --backend docker), each line's words by command."""
    blocks = re.findall(r"^```\n(.*?)^```", PAGE.read_text(), re.M | re.S)
    block = next(b for b in blocks if "faasgd up --backend docker --nodes" in b)
    lines = [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("faasgd ")]
    return {words[0]: words for words in lines}


def test_three_container_nodes_place_train_to_target_count_links_and_leave_nothing(deployed, tmp_path):
    project, directory = deployed["runtime"].project, tmp_path / ".faasgd"
    env = {**os.environ, "REGISTRY": deployed["registry"], "TAG": "docker-test"}

    def faasgd(*args, timeout=300):
        return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, cwd=project, env=env)

    lines = documented()
    assert list(lines) == ["up", "status", "train", "down"]
    started = faasgd(*lines["up"], "--port", 0, "--wait", "--dir", directory)
    state = json.loads((directory / "state.json").read_text()) if (directory / "state.json").exists() else {}
    prefix = (state.get("nodes") or {}).get("prefix")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        shown = faasgd(*lines["status"], "--dir", directory)
        assert shown.returncode == 0, shown.stderr
        nodes = json.loads(shown.stdout)["nodes"]
        assert [node["name"] for node in nodes] == ["node-1", "node-2", "node-3"]
        assert len([node for node in nodes if node["replicas"]]) >= 2
        assert {"redis", "memcached"} <= set(nodes[0]["stores"])
        assert all(f"memcached-local/{node['name']}" in node["stores"] for node in nodes)
        state = json.loads((directory / "state.json").read_text())
        for replica in state["replicas"]:  # each a container on its node's network
            found = docker_cli.inspect("container", replica["container"])
            assert list(found["NetworkSettings"]["Networks"]) == [
                f"faasgd-{state['runtime_id']}-{replica['node']}"], replica

        redis = urlsplit(state["stores"]["redis"]["url"])
        stranger = docker_cli.docker("run", "--rm", "--pull", "never", "--network", "bridge", "--entrypoint", "python",
                                     deployed["images"][0], "-c", PROBE, redis.hostname, str(redis.port), timeout=60)
        assert stranger.strip() == "refused or dropped", stranger  # a container of another network

        trained = faasgd(*lines["train"], "--dir", directory, timeout=600)
        assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-3000:] + logs(directory)
        result = json.loads(trained.stdout)
        assert result["state"] == "done" and result["reached_target"], trained.stderr[-2000:]
        assert result["target_accuracy"] == 0.85
        links = result["link_bytes"]
        assert set(links) == {"node-1", "node-2", "node-3"}
        setup_node = next(node["name"] for node in nodes if any(n.startswith("emnist-setup") for n in node["replicas"]))
        assert links[setup_node]["from_node"] > 0  # emnist-setup wrote the job to the store from its node
    finally:
        stopped = faasgd(*lines["down"], "--dir", directory)
        left = names(prefix) if prefix else None
        networks = docker_cli.docker("network", "ls", "-q", "--filter", f"label={NODE_LABEL}={prefix}", check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert prefix and left == ([], []) and networks.strip() == ""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
    assert prefix not in links and prefix not in rules


def logs(directory) -> str:
    """The last lines of the runtime's and the replicas' logs."""
    return "".join(f"\n--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-15:])
                   for path in sorted((directory / "logs").glob("*.log")))


PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("connected")
except OSError:
    print("refused or dropped")
"""

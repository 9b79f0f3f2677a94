"""Emulated nodes for containers: docs/how-to/emulated-nodes.md's container session, its lines as typed (`up` gets
`--port 0` and `--wait`, every line the test's `--dir`), with REGISTRY and TAG naming the images this package's
`faas-cli up` pushed, as the page says to export them. `faasgd status --json` names at least two nodes among the
replicas and puts the stores on one; each replica is a container on its node's Docker network; a 2-worker job
reaches 0.85 and its result counts each node's link; a container on another Docker network reaches no store;
`faasgd down` leaves no network, namespace, link or rule of the nodes behind. Root only."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from faasgd.local.nodes.docker_net import NODE_LABEL
from faasgd.local.nodes.links import names
from faasgd.local.services import docker_cli
from support.docker_ready import images_missing
from support.nodes_session import check_three_nodes, documented
from support.paths import ROOT

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(900),
              pytest.mark.skipif(os.geteuid() != 0, reason="emulated nodes need root (namespaces, links, qdiscs)")]

BASE = "python:3.11-slim-bookworm"  # the template's base image: a Python on the node networks


def test_three_container_nodes_place_train_to_target_count_links_and_leave_nothing(deployed, tmp_path):
    project, directory = deployed["runtime"].project, tmp_path / ".faasgd"
    env = {**os.environ, "REGISTRY": deployed["registry"], "TAG": "docker-test"}

    def faasgd(*args, timeout=300):
        return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, cwd=project, env=env)

    lines = documented("faasgd up --backend docker --nodes")
    started = faasgd(*lines["up"], "--port", 0, "--wait", "--dir", directory)
    state = json.loads((directory / "state.json").read_text()) if (directory / "state.json").exists() else {}
    prefix = (state.get("nodes") or {}).get("prefix")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        shown = faasgd(*lines["status"], "--dir", directory)
        assert shown.returncode == 0, shown.stderr
        nodes = json.loads(shown.stdout)["nodes"]
        check_three_nodes(nodes)
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


SERVE = "import http.server, sys; http.server.ThreadingHTTPServer((sys.argv[1], 8000), http.server.SimpleHTTPRequestHandler).serve_forever()"
FETCH = """
import sys, time, urllib.request
began = time.monotonic()
size = len(urllib.request.urlopen(sys.argv[1], timeout=60).read())
print(size, time.monotonic() - began)
"""
PUT = """
import http.client, sys, time
connection = http.client.HTTPConnection(sys.argv[1], 8001, timeout=60)
began = time.monotonic()
connection.request("POST", "/", body=b"x" * int(sys.argv[2]))
connection.getresponse().read()
print(time.monotonic() - began)
"""
SINK = """
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        left = int(self.headers["Content-Length"])
        while left:
            left -= len(self.rfile.read(min(left, 1 << 20)))
        self.send_response(204)
        self.end_headers()
http.server.ThreadingHTTPServer((sys.argv[1], 8001), Sink).serve_forever()
"""
MB = 25_000_000


def test_a_node_link_holds_its_rate_both_ways_and_a_killed_runtime_leaves_nothing_to_faasgd_down(tmp_path):
    """Without function images: `faasgd up --backend docker --nodes 2 --node-link 100mbit`, 25 MB from a server in
    node-1's stores namespace to a container on node-2 and 25 MB back, each timed by a stopwatch in the container
    and counted on both bridges; then the runtime's daemon is SIGKILLed (no cleanup of its own) and `faasgd down`
    removes the containers, networks, namespaces, ifbs and rules it left."""
    reason = images_missing([BASE])
    if reason:
        pytest.skip(reason)
    directory = tmp_path / ".faasgd"
    run = lambda *args: subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)],  # noqa: E731
                                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    started = run("up", "--backend", "docker", "--nodes", 2, "--node-link", "100mbit", "--filter", "emnist-setup",
                  "--port", 0, "--dir", directory)
    state = json.loads((directory / "state.json").read_text()) if (directory / "state.json").exists() else {}
    prefix = (state.get("nodes") or {}).get("prefix")
    servers = []
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        first, second = state["nodes"]["list"]
        (tmp_path / "blob").write_bytes(b"\0" * MB)
        for script in (SERVE, SINK):
            servers.append(subprocess.Popen(["ip", "netns", "exec", first["netns"], sys.executable, "-c", script,
                                             first["address"]], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        for port in (8000, 8001):
            wait_listening(first["address"], port)
        container = ["run", "--rm", "--pull", "never", "--network", second["network"], "--entrypoint", "python", BASE]
        before = {node["name"]: link(node["link"]) for node in (first, second)}
        size, fetch_s = docker_cli.docker(*container, "-c", FETCH, f"http://{first['address']}:8000/blob",
                                          timeout=120).split()
        put_s = float(docker_cli.docker(*container, "-c", PUT, first["address"], str(MB), timeout=120))
        after = {node["name"]: link(node["link"]) for node in (first, second)}
        assert int(size) == MB
        for seconds in (float(fetch_s), put_s):  # 25 MB at 100 Mbit/s: 2.0 s of payload, a little more on the wire
            assert 1.9 < seconds < 4.0, (fetch_s, put_s)
        sent = {name: (after[name][0] - before[name][0], after[name][1] - before[name][1]) for name in after}
        assert sent["node-1"][1] > MB and sent["node-2"][0] > MB  # out of node-1, into node-2: the fetch
        assert sent["node-2"][1] > MB and sent["node-1"][0] > MB  # and back: the upload
    finally:
        for server in servers:
            server.kill()
            server.wait()
        if state.get("pid"):
            os.kill(state["pid"], signal.SIGKILL)
        stopped = run("down", "--dir", directory)
    assert stopped.returncode == 0, stopped.stderr
    assert prefix and names(prefix) == ([], [])
    assert docker_cli.docker("network", "ls", "-q", "--filter", f"label={NODE_LABEL}={prefix}").strip() == ""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert prefix not in links and prefix not in subprocess.run(["iptables-save"], capture_output=True, text=True).stdout


def wait_listening(host: str, port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {host}:{port}"
            time.sleep(0.1)


def link(name: str) -> tuple[int, int]:
    """A node link's bytes so far: (to the node, from the node), the bridge's tx and rx."""
    return tuple(int(Path(f"/sys/class/net/{name}/statistics/{c}_bytes").read_text()) for c in ("tx", "rx"))

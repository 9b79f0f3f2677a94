"""docs/how-to/emulated-nodes.md's session, its lines as typed (`up` gets `--port 0` and `--wait`, every line the
test's `--dir`): `faasgd up --nodes 3 --node-link 100mbit`; `faasgd status --json` names at least two nodes among
the replicas and puts the stores on one; `faasgd scale` places a third emnist-train replica by the same rules; a 2-worker job reaches 0.85 with emnist-train beside the store (the
manifests' pod affinity) and its result counts each node link's bytes; `faasgd down` leaves no namespace, link,
bridge or FORWARD rule of the nodes behind. Root only (namespaces, links, qdiscs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from faasgd.local.nodes.links import names, remove_all
from support.nodes_session import check_three_nodes, documented
from support.paths import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.serial,
              pytest.mark.skipif(os.geteuid() != 0, reason="emulated nodes need root (namespaces, links, qdiscs)")]




def faasgd(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_three_nodes_place_replicas_train_to_target_count_links_and_leave_nothing(tmp_path):
    directory = tmp_path / ".faasgd"
    lines = documented("faasgd up --nodes")
    started = faasgd(*lines["up"], "--port", 0, "--wait", "--dir", directory)
    state = json.loads((directory / "state.json").read_text()) if (directory / "state.json").exists() else {}
    prefix = (state.get("nodes") or {}).get("prefix")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        shown = faasgd(*lines["status"], "--dir", directory)
        assert shown.returncode == 0, shown.stderr
        nodes = json.loads(shown.stdout)["nodes"]
        check_three_nodes(nodes)
        trains = [name for node in nodes for name in node["replicas"] if name.startswith("emnist-train")]
        assert len(trains) == 2 and set(trains) <= set(nodes[0]["replicas"])  # beside the store

        scaled = faasgd("scale", "emnist-train", "--replicas", 3, "--wait", 120, "--dir", directory)
        assert scaled.returncode == 0, scaled.stderr
        replicas = json.loads((directory / "state.json").read_text())["replicas"]
        assert sorted(r["node"] for r in replicas if r["function"] == "emnist-train") == ["node-1"] * 3  # as placed

        trained = faasgd(*lines["train"], "--dir", directory)
        result = json.loads(trained.stdout)
        assert result["state"] == "done" and result["reached_target"], trained.stderr[-2000:]
        assert result["target_accuracy"] == 0.85  # the stack's default, the bar
        links = result["link_bytes"]
        assert set(links) == {"node-1", "node-2", "node-3"}
        setup_node = next(node["name"] for node in nodes if any(n.startswith("emnist-setup") for n in node["replicas"]))
        assert links[setup_node]["from_node"] > 0  # emnist-setup wrote the job to the store from its node
    finally:
        stopped = faasgd(*lines["down"], "--dir", directory)
        if prefix:
            left = names(prefix)
            remove_all(prefix)  # a failed assertion above still leaves this machine clean
    assert stopped.returncode == 0, stopped.stderr
    assert prefix and left == ([], [])
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True).stdout
    assert prefix not in listed and prefix not in links and prefix not in rules

"""What the two emulated-nodes session tests share (tests/e2e/test_nodes_e2e.py for processes,
tests/docker/test_docker_nodes.py for containers): the page's session lines, and what `faasgd up --nodes 3`'s
`faasgd status --json` must show of the nodes."""

from __future__ import annotations

import re
import shlex

from support.paths import ROOT

PAGE = ROOT / "docs" / "how-to" / "emulated-nodes.md"


def documented(marker: str) -> dict[str, list[str]]:
    """The page's first block holding `marker`, each `faasgd` line's words by its command."""
    blocks = re.findall(r"^```\n(.*?)^```", PAGE.read_text(), re.M | re.S)
    block = next(b for b in blocks if marker in b)
    lines = [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("faasgd ")]
    assert list(lines := {words[0]: words for words in lines}) == ["up", "status", "train", "down"]
    return lines


def check_three_nodes(nodes: list[dict]) -> None:
    """Three nodes, replicas on at least two, the stores on node-1 and a memcached-local on each (the DaemonSet)."""
    assert [node["name"] for node in nodes] == ["node-1", "node-2", "node-3"]
    assert len([node for node in nodes if node["replicas"]]) >= 2
    assert {"redis", "memcached"} <= set(nodes[0]["stores"])  # the store node
    assert all(f"memcached-local/{node['name']}" in node["stores"] for node in nodes)

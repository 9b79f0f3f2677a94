"""faasgd.local.nodes.network on the real kernel: the nodes' namespaces, links shaped both ways by tbf and the bridge
exist once created; a store in one node is reached from the host and from the other node (through both links); the
kernel's counters of each link count what crossed it, each way; and nothing outlives `remove` (no namespace, link,
bridge, FORWARD rule or process inside), nor a creation that failed half-way. Root only."""

from __future__ import annotations

import os
import subprocess

import psutil
import pytest
from pymemcache.client.base import Client

from faasgd.errors import FaasgdError
from faasgd.local.nodes import cluster, network
from faasgd.local.nodes.links import names
from faasgd.local.services.stores import start_memcached

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="emulated nodes need root (namespaces, links, qdiscs)")]
VALUE = b"v" * (512 * 1024)


def nothing_left(net: network.NodeNet) -> None:
    spaces, links = names(net.prefix)
    assert spaces == [] and links == []
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True).stdout
    assert f"{net.prefix}-br" not in rules


def qdisc(net: network.NodeNet, node: network.Node, inside: bool) -> str:
    where, device = (["-n", node.netns], node.ns_veth) if inside else ([], node.host_veth)
    return subprocess.run(["tc", *where, "qdisc", "show", "dev", device], capture_output=True, text=True).stdout


def test_nodes_are_shaped_both_ways_reach_each_other_count_their_bytes_and_leave_nothing(tmp_path):
    net = network.NodeNet.plan(2, "200mbit", tmp_path)
    server = None
    try:
        net.create()
        first, second = net.nodes
        for node in net.nodes:
            for inside in (False, True):
                assert "tbf" in qdisc(net, node, inside) and "200Mbit" in qdisc(net, node, inside)
        server = start_memcached(where=cluster.where(first))
        before = net.link_bytes()
        client = Client((first.address, server.port), connect_timeout=5, timeout=10)
        assert client.set("k", VALUE, noreply=False)
        client.close()
        moved = network.bytes_between(before, net.link_bytes())
        assert moved["node-1"]["to_node"] > len(VALUE) > 10 * moved["node-1"]["from_node"]
        assert moved["node-2"]["to_node"] < len(VALUE) / 10  # the host spoke to node-1 only
        probe = f"import socket; socket.create_connection(('{first.address}', {server.port}), timeout=5).close()"
        reached = subprocess.run(second.command(["python3", "-c", probe]), capture_output=True, text=True)
        assert reached.returncode == 0, reached.stderr  # node to node, through the bridge
        pid = server.pid
    finally:
        net.remove()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    if server is not None:
        server.stop()
    nothing_left(net)


def test_a_creation_that_fails_half_way_leaves_nothing(tmp_path, monkeypatch):
    net = network.NodeNet.plan(2, "100mbit", tmp_path)
    real = network.run

    def failing(argv):
        if argv[0] == "tc":
            raise FaasgdError("tc failed (injected)")
        real(argv)

    monkeypatch.setattr(network, "run", failing)
    with pytest.raises(FaasgdError, match="injected"):
        net.create()
    nothing_left(net)

"""Emulated nodes for the container backend, planned without Docker (tests/docker/test_docker_nodes.py runs them):
names and addresses, where a node's containers find the stores, the wall admitting the node bridges."""

from __future__ import annotations

import dataclasses
import ipaddress

from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.nodes import cluster, docker_net
from faasgd.local.replicas.containers import run_argv, service_hosts
from faasgd.local.services import docker_wall
from faasgd.local.services.stores import ServerProcess
from support.paths import ROOT
from test_containers import deployment, flag_values
from test_docker_wall import table  # noqa: F401  (the fake filter table, a fixture)

BENCHMARKING = ipaddress.ip_network("198.18.0.0/15")
GATEWAY = "172.30.0.1"  # the host's address on the runtime's own network


def plan(tmp_path, count: int = 3, rate: str | None = "100mbit") -> docker_net.DockerNodeNet:
    return docker_net.DockerNodeNet.plan(count, rate, tmp_path, "abc1234567", GATEWAY)


def test_each_node_is_a_24_of_its_own_with_its_stores_at_2_and_names_linux_takes(tmp_path):
    net = plan(tmp_path)
    subnets = [ipaddress.ip_network(node.subnet) for node in net.nodes]
    assert all(s.prefixlen == 24 and s.subnet_of(BENCHMARKING) for s in subnets) and len(set(subnets)) == 3
    for node, subnet in zip(net.nodes, subnets):
        assert ipaddress.ip_address(node.address) == subnet[2] and ipaddress.ip_address(node.bridge_ip) == subnet[1]
    names = [name for node in net.nodes for name in (node.netns, node.host_veth, node.ns_veth, node.ifb, node.bridge)]
    assert all(len(name) <= 15 for name in names) and len(set(names)) == len(names)
    # links.remove_all takes what starts with PREFIX-; the bridges are Docker's, removed with their networks
    assert all(n.bridge.startswith(net.prefix) and not n.bridge.startswith(net.prefix + "-") for n in net.nodes)
    assert [node.network for node in net.nodes] == [f"faasgd-abc1234567-node-{i}" for i in (1, 2, 3)]
    assert plan(tmp_path) == net  # a crashed runtime's leftovers are found by the same names
    assert len(plan(tmp_path, 20).nodes) == 20  # as many as the process backend's


def test_the_rules_name_only_this_runtimes_node_bridges(tmp_path):
    net = plan(tmp_path)
    accept, unmasked = docker_net.accept_rule(net.prefix), docker_net.unmasked_rule(net.prefix)
    assert accept[:4] == ["-i", f"{net.prefix}b+", "-o", f"{net.prefix}b+"] and accept[-1] == net.prefix
    assert unmasked[:2] == ["-o", f"{net.prefix}b+"] and unmasked[-1] == net.prefix
    assert all(node.bridge.startswith(f"{net.prefix}b") for node in net.nodes)  # what the + matches


def test_the_state_counts_each_node_on_its_bridge(tmp_path):
    entry = plan(tmp_path).to_json()
    assert entry["backend"] == "docker" and entry["gateway"] == GATEWAY and entry["rate_mbit"] == 100.0
    assert [node["link"] for node in entry["list"]] == [node.bridge for node in plan(tmp_path).nodes]


def test_each_nodes_replicas_join_its_network_and_reach_the_gateway_at_the_runtimes_address(tmp_path):
    net = plan(tmp_path, 2, None)
    networks = net.networks()
    assert [(n.name, n.bridge, n.gateway_ip) for n in networks.values()] == [
        (node.network, node.bridge, GATEWAY) for node in net.nodes]
    assert list(networks) == ["node-1", "node-2"]


def server(name: str, host: str, port: int) -> ServerProcess:
    return ServerProcess(name, f"x://{host}:{port}", port, None, None, host=host)


def test_a_nodes_container_finds_the_stores_on_the_store_node_by_name_and_by_address(tmp_path):
    net = plan(tmp_path, 2, None)
    first, second = net.nodes
    stores = {"redis": server("redis", first.address, 6379), "memcached": server("memcached", first.address, 11211),
              "memcached-local/node-1": server("memcached", first.address, 11212),
              "memcached-local/node-2": server("memcached", second.address, 11212)}
    tables = cluster.node_tables(8080, stores, net)
    argv = run_argv(deployment(), "emnist-train-1", net.networks()["node-2"], tables["node-2"], tmp_path / "s")
    hosts = dict(pair.rsplit(":", 1) for pair in flag_values(argv, "--add-host"))
    assert hosts["redis.openfaas-fn"] == first.address and hosts["gateway.openfaas"] == GATEWAY
    assert hosts["memcached-local.openfaas-fn"] == second.address  # its own node's cache
    env = dict(pair.split("=", 1) for pair in flag_values(argv, "--env"))
    assert env["store_url"] == f"redis://{first.address}:6379/0"
    assert flag_values(argv, "--network") == [second.network]
    assert service_hosts({"redis.openfaas-fn:6379": "10.0.0.2:7000"}) == {"redis.openfaas-fn": "10.0.0.2"}


def test_the_wall_admits_the_node_bridges_before_its_refusal(table):  # noqa: F811
    docker_wall.close("abc1234567", GATEWAY, "br-0123456789ab")
    docker_wall.admit("abc1234567", ["fgabcdefb1", "fgabcdefb2"])
    rules = table.chains["FAASGD-abc1234567"]
    assert rules[:4] == ["-i lo -j RETURN", "-i fgabcdefb2 -j RETURN", "-i fgabcdefb1 -j RETURN",
                         "-i br-0123456789ab -j RETURN"]
    assert rules[4:] == ["-p tcp -j REJECT --reject-with tcp-reset", "-j DROP"]


def test_one_node_or_processes_plan_no_docker_network(tmp_path):
    from faasgd.local.nodes.network import NodeNet

    options = UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path), nodes=2, backend="docker")
    site = type("Site", (), {"identity": "abc1234567", "gateway_ip": GATEWAY})()
    assert isinstance(cluster.plan(options, tmp_path, site), docker_net.DockerNodeNet)
    assert isinstance(cluster.plan(dataclasses.replace(options, backend="process"), tmp_path, None), NodeNet)
    assert cluster.plan(dataclasses.replace(options, nodes=1), tmp_path, site) is None


def test_a_crashed_runtimes_nodes_go_with_its_leftovers_whatever_the_next_up_asks(tmp_path, monkeypatch):
    from faasgd.local import processes
    from faasgd.local.lifecycle import control
    from faasgd.local.nodes import links
    from faasgd.local.services import docker_cli

    removed, stopped = [], []
    monkeypatch.setattr(links, "remove_all", lambda prefix: removed.append(("namespaces", prefix)))
    monkeypatch.setattr(docker_net, "remove_docker_nodes", lambda prefix: removed.append(("networks", prefix)))
    monkeypatch.setattr(docker_cli, "remove_labelled_containers", lambda label: removed.append(("containers", label)))
    monkeypatch.setattr(processes, "alive", lambda ref: True)  # the stores outlived their runtime
    monkeypatch.setattr(processes, "stop_all", lambda refs, *_, **__: stopped.extend(refs) or list(refs))
    redis = {"pid": 4321, "create_time": 1000.0}
    for nodes, expected in (
            (None, []),  # no nodes: a store still running is kept for the next runtime to adopt
            ({"prefix": "fgabcdef"}, [("namespaces", "fgabcdef")]),
            ({"prefix": "fgabcdef", "backend": "docker"},
             [("containers", "faasgd.runtime=abc1234567"), ("networks", "fgabcdef")])):
        removed.clear(), stopped.clear()
        state = {"runtime_id": "abc1234567", "stores": {"redis": redis}, **({"nodes": nodes} if nodes else {})}
        _, kept = control._leftovers(tmp_path, state, keep_stores=True)
        assert removed == expected
        assert list(kept) == ([] if nodes else ["redis"])  # a node's stores go with its namespace
        assert [ref.pid for ref in stopped] == ([4321] if nodes else [])

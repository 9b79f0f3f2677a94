"""Emulated nodes without creating any: `faasgd up --nodes`'s options and refusals, the names and addresses a runtime's
nodes get, the Service tables of the functions on each node, and placement as the k8s/ manifests ask it."""

import dataclasses
import ipaddress
import os
from pathlib import Path

import pytest

from faasgd.cli.main import main
from faasgd.errors import ConfigError
from faasgd.local.lifecycle import control, daemon
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.nodes import cluster, network
from faasgd.local.nodes.links import NeedsRoot
from faasgd.local.nodes.placement import Preference, Pod, function_pod, manifest_rules, place
from faasgd.local.replicas.pods import Host
from faasgd.local.services.stack_groups import GroupPlan
from faasgd.local.services.stores import ServerProcess
from support.paths import ROOT

BENCHMARKING = ipaddress.ip_network("198.18.0.0/15")


def test_the_daemon_reads_back_the_nodes_up_asked_for(tmp_path):
    given = UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path), nodes=3, node_link="100mbit", placement="spread")
    assert UpOptions.from_args(daemon.parse_args(given.check().to_argv())) == given


def test_one_node_is_todays_runtime_its_flags_unchanged(tmp_path):
    assert UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path)).to_argv() == \
        UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path), nodes=1).to_argv()
    assert "--nodes" not in UpOptions(nodes=1).to_argv()


@pytest.mark.parametrize("options, flag", [
    (UpOptions(nodes=0), "--nodes"), (UpOptions(nodes=21), "--nodes"), (UpOptions(nodes=True), "--nodes"),
    (UpOptions(nodes=2.5), "--nodes"), (UpOptions(nodes=3, node_link="fast"), "--node-link"),
    (UpOptions(nodes=3, node_link="0mbit"), "--node-link"), (UpOptions(nodes=3, node_link="100"), "--node-link"),
    (UpOptions(nodes=3, placement="random"), "--placement"), (UpOptions(node_link="100mbit"), "--node-link"),
    (UpOptions(placement="spread"), "--placement"), (UpOptions(nodes=21, backend="docker"), "--nodes"),
    (UpOptions(nodes=2, stores="pool"), "--nodes"),
])
def test_bad_node_options_name_the_flag(options, flag):
    with pytest.raises(ConfigError, match=f"^{flag}: "):
        options.check()


def test_up_refuses_nodes_without_root_naming_it_and_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(NeedsRoot, match="emulated nodes .* need root"):
        control.up(UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path / "run"), nodes=3, watchdog="off"))
    assert not (tmp_path / "run").exists()


def test_the_cli_refuses_a_bad_link_rate_and_writes_nothing(tmp_path, capsys):
    code = main(["up", "-f", str(ROOT / "stack.yml"), "--nodes", "3", "--node-link", "fast",
                 "--dir", str(tmp_path / "run")])
    assert code != 0
    assert "--node-link" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, mbit", [("100mbit", 100.0), ("1gbit", 1000.0), ("500kbit", 0.5), ("2.5Mbit", 2.5)])
def test_rates_read_as_tc_writes_them(text, mbit):
    assert network.parse_rate(text) == mbit


def test_each_runtime_folder_gets_its_own_names_and_benchmarking_addresses(tmp_path):
    one = network.NodeNet.plan(3, "100mbit", tmp_path / "a")
    other = network.NodeNet.plan(3, None, tmp_path / "b")
    assert one.prefix != other.prefix and other.rate_mbit is None and one.rate_mbit == 100.0
    assert network.NodeNet.plan(3, "100mbit", tmp_path / "a") == one  # a crashed runtime's leftovers are found
    names = [name for node in one.nodes for name in (node.netns, node.host_veth, node.ns_veth)]
    assert all(name.startswith(one.prefix + "-") and len(name) <= 15 for name in names)  # a link name's limit
    addresses = [ipaddress.ip_address(a) for a in [one.gateway, *(node.address for node in one.nodes)]]
    assert all(address in BENCHMARKING for address in addresses) and len(set(addresses)) == 4
    assert [node.name for node in one.nodes] == ["node-1", "node-2", "node-3"]


def test_link_bytes_between_two_readings_per_node_and_way():
    before = {"node-1": {"to_node": 100, "from_node": 10}}
    after = {"node-1": {"to_node": 350, "from_node": 70}, "node-2": {"to_node": 5, "from_node": 0}}
    assert network.bytes_between(before, after) == {"node-1": {"to_node": 250, "from_node": 60},
                                                    "node-2": {"to_node": 5, "from_node": 0}}
    assert network.runtime_link_bytes({"stores": {}}) is None  # a runtime without nodes counts nothing


def server(name: str, host: str, port: int) -> ServerProcess:
    return ServerProcess(name, f"x://{host}:{port}", port, None, None, host=host)


def test_each_nodes_functions_reach_the_stores_on_the_store_node_and_their_own_local_cache(tmp_path):
    net = network.NodeNet.plan(2, "100mbit", tmp_path)
    first, second = net.nodes
    stores = {"redis": server("redis", first.address, 6000), "memcached": server("memcached", first.address, 6001),
              "memcached-local/node-1": server("memcached", first.address, 6002),
              "memcached-local/node-2": server("memcached", second.address, 6003)}
    tables = cluster.node_tables(8080, stores, net)
    for node, cache in ((first, 6002), (second, 6003)):
        table = tables[node.name]
        assert table["gateway.openfaas:8080"] == f"{net.gateway}:8080"
        assert table["redis.openfaas-fn:6379"] == f"{first.address}:6000"
        assert table["memcached.openfaas-fn:11211"] == f"{first.address}:6001"
        assert table["memcached-local.openfaas-fn:11211"] == f"{node.address}:{cache}"
    assert cluster.store_nodes(net) == {"redis": "node-1", "memcached": "node-1", "memcached-local/node-1": "node-1",
                                        "memcached-local/node-2": "node-2"}


def test_the_manifests_ask_for_the_stores_beside_emnist_train_and_a_local_cache_per_node():
    rules = manifest_rules(ROOT / "k8s")
    train = function_pod("emnist-train")
    assert rules["redis"].kind == rules["memcached"].kind == "Deployment"
    assert rules["memcached-local"].kind == "DaemonSet"
    assert all(term.matches(train.labels) for term in rules["redis"].preferences + rules["memcached"].preferences)
    assert not any(term.matches(function_pod("emnist-setup").labels) for term in rules["redis"].preferences)
    assert manifest_rules(ROOT / "no-such-folder") == {}


def seated(policy: str, tmp_path: Path, functions: list[str]) -> list[str]:
    """The nodes the runtime's Seats give `functions`' replicas, started one after another, on 3 nodes."""
    net = network.NodeNet.plan(3, None, tmp_path)
    seats = cluster.Seats(net, {node.name: {"t": node.name} for node in net.nodes}, policy, manifest_rules(ROOT / "k8s"))
    running: list[tuple[str, str]] = []
    host = Host(tmp_path, None, {}, {})
    for function in functions:
        given = seats(host, function, running)
        assert given.services == {"t": given.node} and given.netns == f"/run/netns/{net.prefix}-{given.node[-1]}"
        running.append((function, given.node))
    return [node for _, node in running]


def test_with_affinity_emnist_train_goes_beside_the_store_and_the_rest_spreads(tmp_path):
    assert seated("affinity", tmp_path, ["emnist-setup", "emnist-train", "emnist-train", "emnist-train"]) == \
        ["node-2", "node-1", "node-1", "node-1"]


def test_spread_puts_each_replica_of_a_function_on_another_node(tmp_path):
    assert seated("spread", tmp_path, ["emnist-train", "emnist-train", "emnist-train"]) == \
        ["node-2", "node-3", "node-1"]


def test_placement_weighs_affinity_both_ways_then_spread_then_load():
    store = Pod("store", {"app": "store"}, (Preference(100, {"faas_function": "f"}),), "b")
    assert place(function_pod("f"), ["a", "b"], [store]) == "b"  # the store's term draws f (symmetry)
    assert place(function_pod("g"), ["a", "b"], [store]) == "a"  # g is not drawn: the emptier node
    seeker = dataclasses.replace(function_pod("h"), preferences=(Preference(5, {"app": "store"}),))
    assert place(seeker, ["a", "b"], [store]) == "b"  # its own term
    assert place(seeker, ["a", "b"], [store], policy="spread") == "a"
    with pytest.raises(ConfigError, match="^--nodes: "):
        place(seeker, [], [])


def test_up_refuses_nodes_without_of_watchdog_naming_the_flag_and_starts_nothing(tmp_path, monkeypatch):
    from faasgd.local.nodes import links

    monkeypatch.setattr(links, "require_root", lambda what: None)  # as root, with ip and tc
    with pytest.raises(ConfigError, match="^--nodes: replicas on emulated nodes run under of-watchdog"):
        control.up(UpOptions(str(ROOT / "stack.yml"), 0, str(tmp_path / "run"), nodes=3, watchdog="off"))
    assert not (tmp_path / "run").exists()


def test_a_stack_naming_a_store_group_is_refused_on_nodes(tmp_path):
    net = network.NodeNet.plan(2, None, tmp_path)
    assert set(cluster.store_starters(net, tmp_path, None)) == {"redis", "memcached", "memcached-local/node-1",
                                                                "memcached-local/node-2"}
    with pytest.raises(ConfigError, match="^--nodes: the stack names a Redis Cluster"):
        cluster.store_starters(net, tmp_path, None, GroupPlan(cluster_masters=3))


def test_up_refuses_other_nodes_than_the_running_runtimes_and_takes_it_without_asking(tmp_path):
    from faasgd.local.lifecycle.state_file import write_state
    from faasgd.local.processes import ProcessRef

    nodes = network.NodeNet.plan(3, "100mbit", tmp_path).to_json()
    write_state(tmp_path, {**ProcessRef.of(os.getpid()).to_json(), "gateway_url": "http://127.0.0.1:1",
                           "stores": {}, "replicas": [], "nodes": {**nodes, "placement": "affinity"}})
    for asked in (UpOptions(nodes=2), UpOptions(nodes=3), UpOptions(nodes=3, node_link="1gbit"),
                  UpOptions(nodes=3, node_link="100mbit", placement="spread")):
        with pytest.raises(ConfigError, match="^--nodes: the local runtime running .* has 3 node"):
            control.refuse_other_nodes(control.read_state(tmp_path), asked, tmp_path)
    control.refuse_other_nodes(control.read_state(tmp_path), UpOptions(nodes=3, node_link="100mbit"), tmp_path)
    control.refuse_other_nodes(control.read_state(tmp_path), UpOptions(), tmp_path)  # faasgd train's up

"""faasgd.testing.shaped_net: a node's link holds its configured rate both ways, timed with a stopwatch
(time.perf_counter on the host) over bytes a real memcached in the namespace takes and gives back; unshaped it
is much faster; and nothing (namespace, link, process, iptables rule) outlives the context, also after an
exception, and leftovers of a killed run are removed on entering. Root-only tests skip without root."""

from __future__ import annotations

import os
import subprocess
import time

import psutil
import pytest
from pymemcache.client.base import Client

from faasgd.errors import ConfigError
from faasgd.testing import shaped_net
from faasgd.testing.shaped_net import NeedsRoot, ShapedNet, names
from faasgd.testing.shaped_stores import start_in

pytestmark = pytest.mark.integration
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="shaped nodes need root (network namespaces, veth links, "
                                                          "tc qdiscs); CI runs as root")
PREFIX = "fsgd-sct"  # not the bench's fsgd-scale: a test run never removes a running bench's nodes
SUBNET = 201
RATE_MBIT = 40  # 5 MB/s: 10 MB take 2 s each way
VALUE = b"x" * (1 << 20)
VALUES = 10


def timed_transfer(address: str) -> tuple[float, float]:
    """Payload bytes per second to the store (10 x 1 MiB set) and from it (10 x 1 MiB get)."""
    client = Client((address, 11211), connect_timeout=5, timeout=30, no_delay=True)
    client.set("warm", b"w")
    started = time.perf_counter()
    for i in range(VALUES):
        assert client.set(f"v{i}", VALUE, noreply=False)
    to_store = VALUES * len(VALUE) / (time.perf_counter() - started)
    started = time.perf_counter()
    for i in range(VALUES):
        assert client.get(f"v{i}") == VALUE
    from_store = VALUES * len(VALUE) / (time.perf_counter() - started)
    client.close()
    return to_store, from_store


@needs_root
@pytest.mark.serial
def test_the_link_holds_its_rate_both_ways_and_unshaped_is_much_faster():
    configured = RATE_MBIT * 1e6 / 8
    with ShapedNet(1, RATE_MBIT, prefix=PREFIX, subnet=SUBNET) as net:
        node = net.nodes[0]
        start_in(net, node, "memcached")
        shaped = timed_transfer(node.address)
        net.shape(None)
        unshaped = timed_transfer(node.address)
    for rate in shaped:  # payload under the wire rate (headers ride on it); a loaded machine may lose some
        assert 0.6 * configured < rate < 1.05 * configured, (shaped, configured)
    for rate in unshaped:
        assert rate > 4 * configured, (unshaped, configured)


def gone(prefix: str, pids: list[int]) -> None:
    assert names(prefix) == ([], [])
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True).stdout
    assert f"{prefix}-br" not in rules


@needs_root
def test_nothing_outlives_the_context():
    with ShapedNet(2, RATE_MBIT, prefix=PREFIX, subnet=SUBNET, node_to_node=True) as net:
        servers = [start_in(net, node, "memcached") for node in net.nodes]
        spaces, links = names(PREFIX)
        assert sorted(spaces) == [f"{PREFIX}-1", f"{PREFIX}-2"]
        assert {f"{PREFIX}-br", f"{PREFIX}-h1", f"{PREFIX}-h2"} <= set(links)
        assert all(server.alive() for server in servers)
    gone(PREFIX, [server.pid for server in servers])


@needs_root
def test_nothing_outlives_the_context_after_an_exception():
    servers = []
    with pytest.raises(RuntimeError, match="mid-bench"):
        with ShapedNet(2, RATE_MBIT, prefix=PREFIX, subnet=SUBNET, node_to_node=True) as net:
            servers = [start_in(net, node, "memcached") for node in net.nodes]
            raise RuntimeError("mid-bench")
    assert len(servers) == 2
    gone(PREFIX, [server.pid for server in servers])


@needs_root
def test_leftovers_of_a_killed_run_are_removed_on_entering():
    subprocess.run(["ip", "netns", "add", f"{PREFIX}-7"], check=True)
    stray = subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}-7", "sleep", "60"])
    subprocess.run(["ip", "link", "add", f"{PREFIX}-h7", "type", "veth", "peer", "name", f"{PREFIX}-x7"], check=True)
    try:
        with ShapedNet(1, RATE_MBIT, prefix=PREFIX, subnet=SUBNET):
            spaces, links = names(PREFIX)
            assert spaces == [f"{PREFIX}-1"]
            assert f"{PREFIX}-h7" not in links and f"{PREFIX}-x7" not in links
            assert stray.wait(5) is not None
    finally:
        stray.kill()
        stray.wait()
        shaped_net.remove_all(PREFIX)
    gone(PREFIX, [stray.pid])


def test_without_root_it_refuses_naming_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(NeedsRoot, match="need root"):
        with ShapedNet(1, RATE_MBIT, prefix=PREFIX, subnet=SUBNET):
            pass


@pytest.mark.parametrize("settings, field", [
    ({"nodes": 0}, "nodes"), ({"nodes": 21}, "nodes"), ({"nodes": True}, "nodes"),
    ({"rate_mbit": 0}, "rate_mbit"), ({"rate_mbit": "100"}, "rate_mbit"),
    ({"prefix": "a-very-long-prefix"}, "prefix"), ({"prefix": "Bad"}, "prefix"),
    ({"subnet": 256}, "subnet"),
])
def test_bad_settings_name_the_field(settings, field):
    arguments = {"nodes": 1, "rate_mbit": 100.0, "prefix": PREFIX, "subnet": SUBNET, **settings}
    with pytest.raises(ConfigError) as raised:
        ShapedNet(**arguments)
    assert raised.value.field == field


def test_the_bucket_holds_more_than_the_largest_packet_and_names_the_rate():
    assert shaped_net.tbf(100)[:3] == ["tbf", "rate", "100mbit"]
    assert int(shaped_net.tbf(100)[4]) >= 64 * 1024
    assert int(shaped_net.tbf(10_000)[4]) == int(10_000e6 / 8 * shaped_net.BURST_S)

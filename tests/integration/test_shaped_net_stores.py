"""faasgd.testing.shaped_stores: servers inside shaped nodes, the bytes they count checked against what a client
sent and fetched, a Redis Cluster of one master per node holding keys on every master, and the URLs for them."""

from __future__ import annotations

import os

import pytest
import redis
from pymemcache.client.base import Client

from faasgd.store.url import parse_store_url
from faasgd.testing.shaped_net import ShapedNet
from faasgd.testing.shaped_stores import counters, slot_range, start_cluster, start_in, store_url

pytestmark = pytest.mark.integration
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="shaped nodes need root (network namespaces, veth links, "
                                                          "tc qdiscs); CI runs as root")
PREFIX = "fsgd-scs"
SUBNET = 202
PAYLOAD = 1 << 20


@needs_root
@pytest.mark.parametrize("kind", ["memcached", "redis"])
def test_the_servers_count_what_a_client_moved(kind):
    with ShapedNet(1, 200, prefix=PREFIX, subnet=SUBNET) as net:
        node = net.nodes[0]
        server = start_in(net, node, kind)
        read_before, written_before = counters(server)
        if kind == "memcached":
            client = Client((node.address, 11211), timeout=10)
            client.set("k", b"v" * PAYLOAD, noreply=False)
            assert len(client.get("k")) == PAYLOAD
        else:
            client = redis.Redis(node.address, 6379, socket_timeout=10)
            client.set("k", b"v" * PAYLOAD)
            assert len(client.get("k")) == PAYLOAD
        read, written = counters(server)
    assert PAYLOAD <= read - read_before < PAYLOAD + 4096
    assert PAYLOAD <= written - written_before < PAYLOAD + 4096


@needs_root
def test_a_cluster_of_one_master_per_node_holds_keys_on_every_master():
    with ShapedNet(3, 200, prefix=PREFIX, subnet=SUBNET, node_to_node=True) as net:
        servers = start_cluster(net)
        url = store_url("redis", servers)
        cluster = redis.RedisCluster(host=net.nodes[0].address, port=6379, socket_timeout=10)
        for i in range(60):
            cluster.set(f"key-{i}", b"v" * 1000)
        held = [redis.Redis(node.address, 6379).dbsize() for node in net.nodes]
        cluster.close()
    assert parse_store_url(url).nodes == tuple((node.address, 6379) for node in net.nodes)
    assert sum(held) == 60 and all(count > 0 for count in held), held


@needs_root
def test_urls_name_every_node_in_order():
    with ShapedNet(2, 200, prefix=PREFIX, subnet=SUBNET) as net:
        pool = [start_in(net, node, "memcached") for node in net.nodes]
        one = start_in(net, net.nodes[0], "redis")
        urls = store_url("memcached", pool), store_url("memcached", pool[:1]), store_url("redis", [one])
    assert urls == (f"memcached://198.18.{SUBNET}.11:11211,198.18.{SUBNET}.12:11211",
                    f"memcached://198.18.{SUBNET}.11:11211", f"redis://198.18.{SUBNET}.11:6379/0")
    assert parse_store_url(urls[0]).nodes == ((f"198.18.{SUBNET}.11", 11211), (f"198.18.{SUBNET}.12", 11211))


@pytest.mark.parametrize("masters", [1, 2, 3, 7])
def test_the_slots_split_evenly_and_cover_every_slot_once(masters):
    ranges = [slot_range(i, masters) for i in range(masters)]
    covered = [slot for first, last in ranges for slot in range(first, last + 1)]
    assert covered == list(range(16384))
    sizes = [last - first + 1 for first, last in ranges]
    assert max(sizes) - min(sizes) <= 1

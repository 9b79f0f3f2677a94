"""The Redis Cluster store without servers: opening is lazy, chunks are sized and tagged to spread over every master,
and a master's writes are sent again when refused before they ran, fail naming the shard when unacknowledged."""

from __future__ import annotations

import pytest
import redis
from redis.crc import key_slot

from faasgd.errors import StoreUnavailable
from faasgd.store import UpdateRule, open_store
from faasgd.store.redis_cluster_client import ClusterClient, token
from faasgd.store.redis_cluster_store import CHUNKS_PER_MASTER, RedisClusterStore, tag_for, tagged


class Node:
    def __init__(self, name: str, replies: list):
        self.name, self.replies, self.sent = name, replies, []

    def pipeline(self, transaction=False):
        return Pipe(self)

    def info(self, section):
        return {"connected_slaves": 1}


class Pipe:
    def __init__(self, node):
        self.node, self.queued = node, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute_command(self, *args):
        self.queued.append(args)

    def execute(self, raise_on_error=True):
        self.node.sent.append(self.queued)
        return self.node.replies.pop(0)


class Manager:
    def __init__(self):
        self.refreshed = 0

    def initialize(self):
        self.refreshed += 1


class FakeCluster:
    """One master, `node`, for every key."""

    def __init__(self, node):
        self.node, self.nodes_manager = node, Manager()

    def get_node_from_key(self, key):
        return self.node

    def get_redis_connection(self, node):
        return node


def client_with(replies: list) -> tuple[ClusterClient, Node]:
    client = ClusterClient("redis-cluster://h:1", [("h", 1)], None, None, 1.0, wait_timeout_ms=50, failover_s=5.0)
    node = Node("127.0.0.1:7001", replies)
    client._cluster = FakeCluster(node)
    return client, node


def test_open_store_is_lazy_and_reads_the_password_file(tmp_path):
    (tmp_path / "store-password").write_text("pw\n")
    store = open_store("redis-cluster://127.0.0.1:1,127.0.0.1:2", secrets_dir=str(tmp_path))
    assert isinstance(store, RedisClusterStore) and store.client._cluster is None  # nothing contacted
    assert store.client._options["password"] == "pw"
    assert [(n.host, n.port) for n in store.client._options["startup_nodes"]] == [("127.0.0.1", 1), ("127.0.0.1", 2)]
    assert store.server_clock.startswith("redis TIME") and store.fine_clock


def test_a_tag_lands_in_the_slots_asked_for_and_is_always_the_same():
    slots = set(range(5461, 10922))
    tag = tag_for("job-1", slots)
    assert key_slot(tag.encode()) in slots and tag == tag_for("job-1", slots)
    assert key_slot(tagged("faasgd:job-1:w:3", tag).encode()) == key_slot(tag.encode())


class Masters:
    def __init__(self, count):
        self.count = count

    def masters(self):
        return list(range(self.count))


@pytest.mark.parametrize("length, masters, expected", [
    (89_610, 3, -(-89_610 // 12)),  # today's MLP: one default chunk would sit on one master; 4 per master instead
    (89_610, 1, -(-89_610 // 4)),
    (10, 3, 1),  # fewer weights than wanted chunks: one weight each
    (3_000_000, 3, 131_072),  # enough chunks already: the configured size
])
def test_chunks_shrink_until_every_master_holds_a_few(length, masters, expected):
    store = RedisClusterStore("redis-cluster://h:1", Masters(masters))
    per = store._chunk_floats("j", length, UpdateRule("sum"))
    assert per == expected
    assert -(-length // per) >= min(length, CHUNKS_PER_MASTER * masters)


def test_adagrad_halves_the_configured_size_before_spreading():
    store = RedisClusterStore("redis-cluster://h:1", Masters(3), chunk_floats=1000)
    assert store._chunk_floats("j", 100_000, UpdateRule("adagrad", learning_rate=0.1)) == 500


def test_a_write_refused_before_it_ran_is_sent_again_after_a_refresh():
    moved = redis.ResponseError("MOVED 3999 127.0.0.1:7002")
    client, node = client_with([[moved, 1], [1, 1]])
    assert client.cas("k", b"new", token(b"old"), expire=60) is True
    assert len(node.sent) == 2 and node.sent[1][0][0] == "EVAL" and node.sent[1][-1] == ("WAIT", 1, 50)
    assert client.cluster.nodes_manager.refreshed == 1


def test_a_write_no_replica_acknowledged_fails_naming_the_shard():
    client, _ = client_with([[True, 0]])
    with pytest.raises(StoreUnavailable) as e:
        client.set("k", b"v", expire=60)
    assert "shard 127.0.0.1:7001" in str(e.value) and "not acknowledged" in str(e.value)


def test_a_connection_lost_mid_write_names_the_shard_and_says_the_outcome_is_unknown():
    client, node = client_with([])
    node.pipeline = lambda transaction=False: (_ for _ in ()).throw(redis.ConnectionError("reset by peer"))
    with pytest.raises(StoreUnavailable) as e:
        client.add("k", b"v", expire=60)
    assert "shard 127.0.0.1:7001" in str(e.value) and "may or may not" in str(e.value)


def test_without_waiting_no_wait_is_sent_and_cas_reports_changed_and_gone():
    client, node = client_with([[0], [-1]])
    client.wait_replicas = 0
    assert client.cas("k", b"v", token(b"x")) is False
    assert client.cas("k", b"v", token(b"x")) is None
    assert all(command[0] != "WAIT" for batch in node.sent for command in batch)


def test_a_shard_refusing_past_the_deadline_is_named():
    down = redis.ResponseError("CLUSTERDOWN The cluster is down")
    client, _ = client_with([[down, 0]] * 100)
    client.failover_s = 0.3
    with pytest.raises(StoreUnavailable) as e:
        client.set("k", b"v")
    assert "shard 127.0.0.1:7001 refused writes" in str(e.value)
    assert client.cluster.nodes_manager.refreshed >= 1

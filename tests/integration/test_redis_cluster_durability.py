"""Acknowledged means on a replica: what the cluster store acknowledged survives its master's kill -9, and a master
whose replica does not acknowledge a write fails the call naming the shard (the resend then completes it once).
And racing writers lose nothing: each chunk's compare-and-set takes every delta exactly once."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from faasgd.errors import StoreUnavailable
from faasgd.local.services.redis_cluster import start_redis_cluster
from faasgd.store import PushId, keys, memcached_push, open_store

pytestmark = pytest.mark.integration

LENGTH = 1200


@pytest.fixture
def cluster():
    group = start_redis_cluster(masters=3, replicas=1, node_timeout_ms=1000)
    yield group
    group.stop()


def server_of(group, store, job_id: str, index: int):
    name = store.client.cluster.get_node_from_key(store.client.placed[keys.weights_chunk(job_id, index)]).name
    return next(s for s in group.servers if name.endswith(f":{s.port}"))


def replica_of(group, master):
    """The replica following `master` (start_redis_cluster attaches replica k to master k mod masters)."""
    return group.servers[3 + group.servers.index(master)]


def record(seq: int) -> dict:
    return {"pushes": seq, "owner": "a", "state": "running"}


def test_pushes_acknowledged_just_before_a_kill_survive_the_failover(cluster):
    with open_store(cluster.url, timeout_s=2.0) as store:
        store.set_weights("j", np.zeros(LENGTH, np.float32), writers=1)
        for seq in range(1, 31):
            store.push_update("j", np.full(LENGTH, seq, np.float32), push_id=PushId(0, seq), record=record(seq))
        victim = server_of(cluster, store, "j", 0)
        os.kill(victim.pid, signal.SIGKILL)  # right after the last acknowledgement
        store.client.failover_s = 30.0
        survived = None
        for _ in range(100):  # the replica is promoted within a few seconds
            try:
                survived = store.get_weights("j")
                break
            except StoreUnavailable:
                store.client._refresh()
        assert survived is not None
        weights, version = survived
        assert version == 30 and store.worker_record("j", 0)["pushes"] == 30
        np.testing.assert_array_equal(weights, np.full(LENGTH, sum(range(1, 31)), np.float32))
        meta = store._weights_meta("j")
        raw = store.client.get_many(keys.weights_chunks("j", meta.chunks))
        assert all(memcached_push.split(raw[k])[0] == {0: 30} for k in keys.weights_chunks("j", meta.chunks))


def test_a_write_its_replica_does_not_acknowledge_fails_naming_the_shard_and_a_resend_completes_it(cluster):
    with open_store(cluster.url, timeout_s=2.0) as store:
        store.set_weights("j", np.zeros(LENGTH, np.float32), writers=1)
        master = server_of(cluster, store, "j", 0)
        replica = replica_of(cluster, master)
        store.client.wait_timeout_ms = 200
        os.kill(replica.pid, signal.SIGSTOP)
        try:
            with pytest.raises(StoreUnavailable) as e:
                store.push_update("j", np.ones(LENGTH, np.float32), push_id=PushId(0, 1), record=record(1))
            assert f"shard 127.0.0.1:{master.port}" in str(e.value) and "not acknowledged" in str(e.value)
        finally:
            os.kill(replica.pid, signal.SIGCONT)
        push = store.push_update("j", np.ones(LENGTH, np.float32), push_id=PushId(0, 1), record=record(1))
        assert push.applied and push.version == 1
        weights, version = store.get_weights("j")
        assert version == 1
        np.testing.assert_array_equal(weights, np.ones(LENGTH, np.float32))  # added once, not twice


def test_wait_can_be_turned_off(cluster):
    with open_store(cluster.url, timeout_s=2.0) as store:
        store.client.wait_replicas = 0
        store.set_weights("j", np.zeros(LENGTH, np.float32))
        replica = replica_of(cluster, server_of(cluster, store, "j", 0))
        os.kill(replica.pid, signal.SIGSTOP)
        try:
            store.push_update("j", np.ones(LENGTH, np.float32))  # no replica asked: acknowledged by the master alone
        finally:
            os.kill(replica.pid, signal.SIGCONT)
        assert store.get_weights("j")[1] == 1


def test_concurrent_pushes_without_ids_lose_nothing(redis_cluster):
    """4 clients x 60 pushes racing on the same chunks: each chunk's compare-and-set takes every delta exactly once."""
    length, clients, pushes = 5000, 4, 60
    start = (np.arange(length) % 1000).astype(np.float32)
    with open_store(redis_cluster.url, timeout_s=5.0) as store:
        store.set_weights("race", start)
        stores = [store.reopen() for _ in range(clients)]
        conflicts = []

        def push(k):
            delta = ((k + 1) + np.arange(length) % 7).astype(np.float32)
            conflicts.append(sum(stores[k].push_update("race", delta).conflicts for _ in range(pushes)))

        threads = [threading.Thread(target=push, args=(k,)) for k in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        expected = start + pushes * sum(((k + 1) + np.arange(length) % 7).astype(np.float32) for k in range(clients))
        weights, version = store.get_weights("race")
        assert version == clients * pushes and len(conflicts) == clients
        np.testing.assert_array_equal(weights, expected)
        print(f"conflicts: {sum(conflicts)}")

"""What only a Redis Cluster (3 masters, a replica each) has, beyond the store contract it passes with every other
store (test_store_real.py): its own wire format, chunks on every master, the placement kept in the meta, a
non-cluster server refused, the password."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest
import redis

from support import store_contract as contract
from support.expiry_keys import KINDS, MEMCACHED_KINDS, missing_kinds, redis_ttls, write_every_kind
from faasgd.errors import ConfigError, JobNotFound, StoreUnavailable
from faasgd.local.services.redis_cluster import start_redis_cluster
from faasgd.store import UpdateRule, keys, memcached_push, meter, open_store
from faasgd.store.redis_cluster_store import CHUNKS_PER_MASTER

pytestmark = pytest.mark.integration


def open_cluster(group, **options):
    return open_store(group.url, chunk_floats=contract.CHUNK, timeout_s=2.0, **options)


def masters_of(group) -> list[redis.Redis]:
    return [redis.Redis("127.0.0.1", s.port) for s in group.servers[:3]]


def stored_chunk(store, job: str, index: int) -> bytes:
    spread = json.loads(store.client.get(keys.weights_meta(job)))["spread"]
    return store.client.cluster.get(f"{keys.weights_chunk(job, index)}{{{spread[index]}}}")


def test_wire_format_chunks_carry_push_headers_under_tagged_keys(redis_cluster):
    """Chunks are the Memcached store's (push header, then little-endian float32; adagrad [w | G]), under keys
    tagged by the spread in the meta; there are CHUNKS_PER_MASTER per master once the job has enough weights."""
    with open_cluster(redis_cluster) as store:
        for rule, width in ((UpdateRule("sum"), 1), (UpdateRule("adagrad", learning_rate=contract.LR), 2)):
            job, flat = contract.new_job(), contract.weights(2 * contract.CHUNK + 500, seed=3)
            store.set_weights(job, flat, rule=rule)
            meta, wanted = store._meta[job], 3 * CHUNKS_PER_MASTER
            assert meta.chunks == wanted and meta.chunk_floats == -(-flat.size // wanted)
            wire = flat.astype("<f4")
            for i in (0, meta.chunks - 1):
                state = np.full(meta.span(i).stop - meta.span(i).start, contract.ADAGRAD_G0, "<f4").tobytes()
                assert stored_chunk(store, job, i) == \
                    memcached_push.join({}, b"") + wire[meta.span(i)].tobytes() + (state if width == 2 else b"")
            assert int(store.client.get(keys.weights_version(job))) == 0


def test_every_master_holds_chunks_of_the_mlp(redis_cluster):
    """The MLP's ~90k weights in one 128k-float chunk by default: on 3 masters that becomes 4 chunks on each."""
    with open_store(redis_cluster.url) as store:
        job = contract.new_job()
        store.set_weights(job, np.zeros(89_610, np.float32))
        held = []
        for client in masters_of(redis_cluster):
            held.append(sum(1 for _ in client.scan_iter(match=f"faasgd:{job}:w:[0-9]*{{*}}")))
            client.close()
        assert held == [CHUNKS_PER_MASTER] * 3


def test_a_new_store_object_reads_the_placement_from_the_meta(redis_cluster):
    with open_cluster(redis_cluster) as store, open_cluster(redis_cluster) as other:
        job, flat = contract.new_job(), contract.weights(3000, seed=1)
        store.set_weights(job, flat)
        got, version = other.get_weights(job)
        np.testing.assert_array_equal(got, flat)
        assert other.client.placed == {k: v for k, v in store.client.placed.items() if job in k}


def test_a_plain_redis_is_refused_naming_store_url(redis_server):
    url = redis_server.url.replace("redis://", "redis-cluster://").removesuffix("/0")
    store = open_store(url, timeout_s=2.0)
    with pytest.raises(ConfigError) as e:
        store.set_weights("j-plain", np.ones(10, np.float32))
    assert e.value.field == "store_url" and "not in cluster mode" in str(e.value)
    plain = redis.Redis("127.0.0.1", redis_server.port)
    assert plain.exists(keys.weights_meta("j-plain")) == 0
    plain.close()


def test_password_from_url_and_secret_file(tmp_path):
    group = start_redis_cluster(masters=1, password="s3cr:et")
    try:
        port = group.ports[0]
        with open_store(f"redis-cluster://:s3cr%3Aet@127.0.0.1:{port}") as store:
            store.put_record("j", "config", {"ok": 1})
            assert "s3cr" not in store.url
        (tmp_path / "store-password").write_text("s3cr:et\n")
        with open_store(group.url, secrets_dir=str(tmp_path)) as store:
            assert store.get_record("j", "config") == {"ok": 1}
        with pytest.raises(StoreUnavailable) as e:
            open_store(f"redis-cluster://:wrong@127.0.0.1:{port}", timeout_s=1.0).ping()
        assert "wrong" not in str(e.value)
        with pytest.raises(JobNotFound):
            open_store(group.url, secrets_dir=str(tmp_path)).get_weights("none")
    finally:
        group.stop()


def test_every_key_of_a_job_expires_on_every_master(redis_cluster):
    """store/expiry.py's rule over a cluster: each master's keys of the job (SCAN is per node) carry keep_s."""
    job = contract.new_job()
    with open_store(redis_cluster.url) as store:
        write_every_kind(store, job, 60)
    found = {}
    for port in redis_cluster.ports[:3]:
        found.update({re.sub(r"\{[^}]*\}$", "", k): left for k, left in redis_ttls(f"redis://127.0.0.1:{port}/0", job).items()})
    assert missing_kinds(found, job, KINDS + MEMCACHED_KINDS) == []
    assert all(left is not None and 0 < left <= 60 for left in found.values()), found


def test_the_byte_meter_counts_every_nodes_traffic(redis_cluster):
    """store/meter.py counts at the sockets of every node's connections: a fetch of 90k floats reads them all."""
    seen = {}

    def fetch():
        with open_store(redis_cluster.url) as store:
            store.set_weights("meter", np.zeros(90_000, np.float32))
            before = meter.counter().received
            store.get_weights("meter")
            seen["read"], seen["sent"] = meter.counter().received - before, meter.counter().sent

    thread = threading.Thread(target=fetch)
    thread.start()
    thread.join(30)
    assert 90_000 * 4 <= seen["read"] < 90_000 * 4 * 1.1 and seen["sent"] >= 90_000 * 4


def test_with_also_bind_the_nodes_announce_that_address():
    """What CLUSTER SLOTS tells clients is the second address (a container network's gateway in `faasgd up`)."""
    group = start_redis_cluster(masters=2, also_bind="127.0.0.2")
    try:
        with open_store(group.url) as store:
            store.set_weights("j", np.ones(100, np.float32))
            assert store.get_weights("j")[1] == 0
            assert {n.host for n in store.client.cluster.get_nodes()} == {"127.0.0.2"}
    finally:
        group.stop()

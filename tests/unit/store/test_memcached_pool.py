"""The memcached pool without servers: the chunk layout that spreads a job over every server, errors of one server
mapped naming it, and memcached://H:P,H:P opening the pool store lazily."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from pymemcache.exceptions import MemcacheServerError

from faasgd.errors import StoreError, StoreTimeout, StoreUnavailable
from faasgd.store import open_store
from faasgd.store.memcached_pool import (CHUNKS_PER_SERVER, PoolClient, ServerFailed, placement,
                                         spread_chunk_floats)
from faasgd.store.memcached_pool_store import MemcachedPoolStore

MLP = 79_510  # 784-100-10
SERVERS = [("10.0.0.1", 11211), ("10.0.0.2", 11211), ("10.0.0.3", 11211)]


def ring(servers=SERVERS) -> PoolClient:
    return PoolClient(servers, connect_timeout=0.5, timeout=0.5)  # lazy: nothing is contacted


def test_the_mlp_spreads_over_every_server_for_any_job_id():
    client = ring()
    for n in range(300):
        job_id = f"job-{n}"
        floats = spread_chunk_floats(job_id, MLP, 131_072, client.servers, client.server_of)
        held = placement(job_id, -(-MLP // floats), client.server_of)
        assert set(held) == set(client.servers) and min(held.values()) >= CHUNKS_PER_SERVER, (job_id, held)
        assert floats == spread_chunk_floats(job_id, MLP, 131_072, client.servers, client.server_of)  # deterministic


def test_the_layout_depends_on_the_server_names_not_their_order():
    forward, backward = ring(), ring(list(reversed(SERVERS)))
    for n in range(50):
        key = f"faasgd:job-{n}:w:{n}"
        assert forward.server_of(key) == backward.server_of(key)


def test_a_chunk_never_outgrows_the_limit_and_short_models_keep_one_weight_per_chunk():
    client = ring()
    for length, limit in ((10_000_000, 131_072), (MLP, 1000), (MLP, 7)):
        floats = spread_chunk_floats("big", length, limit, client.servers, client.server_of)
        assert 1 <= floats <= limit
        held = placement("big", -(-length // floats), client.server_of)
        assert min(held.values()) >= CHUNKS_PER_SERVER and len(held) == 3
    assert spread_chunk_floats("tiny", 2, 1000, client.servers, client.server_of) == 1
    floats = spread_chunk_floats("few", 12, 1000, client.servers, client.server_of)
    assert len(placement("few", -(-12 // floats), client.server_of)) == 3  # 12 weights still reach all three


class FailingRing:
    """A pool client whose every command fails on one server with `error` (what PoolClient raises)."""

    servers = ["10.0.0.1:11211", "10.0.0.2:11211"]

    def __init__(self, error: BaseException):
        self.error = error

    def server_of(self, key: str) -> str:
        return self.servers[1]

    def __getattr__(self, command):
        def fail(*args, **kwargs):
            raise ServerFailed(self.servers[1], self.error)
        return fail


@pytest.mark.parametrize("error, kind", [
    (socket.timeout("timed out"), StoreTimeout),
    (ConnectionRefusedError(111, "refused"), StoreUnavailable),
    (MemcacheServerError("out of memory"), StoreError),
])
def test_errors_of_one_server_are_store_errors_naming_it(error, kind):
    store = open_store("memcached://10.0.0.1:11211,10.0.0.2:11211", client=FailingRing(error))
    for call in (lambda: store.get_record("j", "config"), lambda: store.incr("j", "n"), store.ping,
                 lambda: store.set_weights("j", np.zeros(10, np.float32))):
        with pytest.raises(kind) as e:
            call()
        assert type(e.value) is kind and "server 10.0.0.2:11211" in str(e.value) and store.url in str(e.value)


def test_several_servers_open_the_pool_store_lazily_and_one_server_the_plain_one():
    pool = open_store("memcached://10.0.0.1:11211,10.0.0.2:11212")
    assert isinstance(pool, MemcachedPoolStore) and pool.client.servers == ["10.0.0.1:11211", "10.0.0.2:11212"]
    assert not isinstance(open_store("memcached://10.0.0.1:11211"), MemcachedPoolStore)

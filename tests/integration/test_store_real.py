"""The store contract over a real redis-server and a real memcached, plus failure modes and a timing print."""

from __future__ import annotations

import time

import numpy as np
import pytest

from support import store_contract as contract
from faasgd.errors import StoreUnavailable
from faasgd.local.services.stores import free_port, start_memcached, start_redis
from faasgd.store import open_store

pytestmark = pytest.mark.integration

KINDS = ["redis", "memcached"]


def open_real(server, **options):
    return open_store(server.url, chunk_floats=contract.CHUNK, timeout_s=2.0, **options)


# Every store the contract holds and the checks each takes: the fixture that starts it (tests/conftest.py,
# tests/integration/conftest.py), the ParameterStore class its URL opens. Memcached, its pool and the Redis Cluster run
# the same push algorithm (store/memcached_push.py), so its half-applied-push check too; the cluster's chunks are
# smaller than CHUNK and their keys tagged, so the two wire-format checks are its own (test_redis_cluster_contract.py).
WIRE = (contract.check_wire_format, contract.check_adagrad_state_stored_with_the_weights)
HALF_APPLIED = contract.SINGLE_CLIENT_CHECKS + contract.MEMCACHED_CHECKS
STORES = {
    "redis": ("redis_server", "RedisStore", contract.SINGLE_CLIENT_CHECKS),
    "memcached": ("memcached_server", "MemcachedStore", HALF_APPLIED),
    "memcached-pool": ("memcached_pool", "MemcachedPoolStore", HALF_APPLIED),
    "redis-cluster": ("redis_cluster", "RedisClusterStore", [c for c in HALF_APPLIED if c not in WIRE]),
}


def single_checks():
    return [pytest.param(kind, check, id=f"{kind}-{check.__name__[6:]}")
            for kind, (_, _, checks) in STORES.items() for check in checks]


@pytest.mark.parametrize("kind, check", single_checks())
def test_contract(request, kind, check):
    server = request.getfixturevalue(STORES[kind][0])
    with open_real(server) as store:
        assert type(store).__name__ == STORES[kind][1]  # the URL opened this kind of store
        check(store)


@pytest.mark.parametrize("check", contract.TWO_CLIENT_CHECKS, ids=lambda c: c.__name__[6:])
@pytest.mark.parametrize("kind", list(STORES))
def test_contract_two_clients(request, kind, check):
    server = request.getfixturevalue(STORES[kind][0])
    with open_real(server) as store, open_real(server) as other:
        check(store, other)


@pytest.mark.parametrize("scheme", ["redis", "memcached"])
def test_nothing_listening_is_unavailable(scheme):
    url = f"{scheme}://127.0.0.1:{free_port()}" + ("/0" if scheme == "redis" else "")
    store = open_store(url, timeout_s=1.0)
    with pytest.raises(StoreUnavailable) as e:
        store.ping()
    assert url in str(e.value)
    with pytest.raises(StoreUnavailable):
        store.get_record("j", "config")


def test_redis_password_from_url_and_secret_file(tmp_path):
    server = start_redis(password="s3cr:et")
    try:
        port = server.port
        with open_store(f"redis://:s3cr%3Aet@127.0.0.1:{port}/0") as store:
            store.ping()
            assert "s3cr" not in store.url
        (tmp_path / "store-password").write_text("s3cr:et\n")
        with open_store(server.url, secrets_dir=str(tmp_path)) as store:
            store.ping()
            store.put_record("j", "config", {"ok": 1})
        for url, secrets in ((f"redis://:wrong@127.0.0.1:{port}/0", None), (server.url, str(tmp_path / "none"))):
            with pytest.raises(StoreUnavailable) as e:
                open_store(url, secrets_dir=secrets).ping()
            assert "authentication failed" in str(e.value) and "wrong" not in str(e.value)
    finally:
        server.stop()


@pytest.mark.parametrize("start", [start_redis, start_memcached], ids=KINDS)
def test_server_stopped_mid_use(start):
    server = start()
    try:
        store = open_store(server.url, timeout_s=1.0)
        store.set_weights("j", np.ones(10, np.float32))
        store.get_weights("j")
        server.stop()
        assert not server.alive()
        for call in (lambda: store.get_weights("j"), lambda: store.push_update("j", np.ones(10)),
                     lambda: store.incr("j", "n")):
            with pytest.raises(StoreUnavailable) as e:
                call()
            assert server.url in str(e.value)
    finally:
        server.stop()


def test_timing_printed(store_server):
    """get_weights / push_update of the 79,510-float MNIST MLP (784-100-10): printed, never asserted."""
    length, repeats = 79_510, 30
    with open_store(store_server.url) as store:
        job = contract.new_job()
        store.set_weights(job, np.zeros(length, np.float32))
        out = np.empty(length, np.float32)
        delta = np.ones(length, np.float32)
        store.get_weights(job, out=out)  # warm: meta cached, connection open
        timings = {}
        for name, call in (("get_weights", lambda: store.get_weights(job, out=out)),
                           ("push_update", lambda: store.push_update(job, delta))):
            samples = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                call()
                samples.append(time.perf_counter() - t0)
            timings[name] = 1000 * float(np.median(samples))
    print(f"\n[timing] {store_server.name} {length} floats: "
          + ", ".join(f"{k} {v:.2f} ms (median of {repeats})" for k, v in timings.items()))

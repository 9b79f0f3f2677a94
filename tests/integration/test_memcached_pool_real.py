"""A pool of three real memcached servers as one store: a 2-worker MLP job reaches 0.85 with its chunks on every
server, each chunk holding every push exactly once; a server down at set-up is named and nothing is written; one
that keeps failing stays in the ring; the byte meter counts the pool's sockets. Each server is asked alone, with a
client of its own."""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import closing

import numpy as np
import pytest
from pymemcache.client.base import Client

from faasgd import job
from faasgd.config import load_config
from faasgd.errors import StoreUnavailable
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.local.services.stores import free_port
from faasgd.store import keys, memcached_push, meter, open_store
from faasgd.store.memcached_pool import CHUNKS_PER_SERVER, PoolClient, ServerFailed

pytestmark = pytest.mark.integration


def run_job(url: str, **overrides):
    """A 2-worker MLP job on fashion-mnist to 0.85 (the defaults), its workers in threads here: (store, id, result)."""
    config = load_config({}, {"dataset": "fashion-mnist", "number_of_workers": 2, "target_accuracy": 0.85,
                              "store_url": url, "store_timeout_s": 5.0, **overrides})
    store = open_store(url, timeout_s=2.0)
    job_id = job.create_job(store, config)
    threads = [threading.Thread(target=run_worker, args=(Call(config, open_store(url, timeout_s=2.0), job_id, i),))
               for i in range(config.number_of_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return store, job_id, job.read_status(store, job_id)["result"]


def alone(server: str) -> Client:
    """A plain client of one server (`host:port`), bypassing the pool's ring."""
    host, port = server.rsplit(":", 1)
    return Client((host, int(port)), default_noreply=False, timeout=5)


def chunks_by_server(store, job_id: str) -> dict[str, dict[int, bytes]]:
    """Every server named -> {chunk index: stored chunk} of the chunks it holds, each server asked alone."""
    meta = store._weights_meta(job_id, fresh=True)
    names = keys.weights_chunks(job_id, meta.chunks)
    held = {}
    for server in store.client.servers:
        with closing(alone(server)) as client:
            found = client.get_many(names)
        held[server] = {i: found[k] for i, k in enumerate(names) if k in found}
    return held


def test_a_two_worker_mlp_job_reaches_085_with_every_push_on_every_chunk_of_every_server(memcached_pool):
    # the pool alone: the same job on one memcached (the store contract's and the e2e tiers' ground) taught this test
    # nothing but a samples/s figure to print beside the pool's, half its time
    store, job_id, result = run_job(memcached_pool.url)
    assert result["state"] == "done" and result["reached_target"], result
    assert result["final_validation_accuracy"] >= 0.85

    held = chunks_by_server(store, job_id)
    meta = store._weights_meta(job_id)
    assert all(len(chunks) >= CHUNKS_PER_SERVER for chunks in held.values()), {s: sorted(c) for s, c in held.items()}
    assert sorted(i for chunks in held.values() for i in chunks) == list(range(meta.chunks))  # each chunk on one
    records = job.read_progress(store, job_id, 2)
    pushes = {w: int(r["pushes"]) for w, r in records.items()}
    assert store.get_weights(job_id)[1] == sum(pushes.values()) > 0  # version = the sum of the pushes
    for server, chunks in held.items():  # every push applied to every chunk, once: each chunk's header says so
        for index, raw in chunks.items():
            applied, floats = memcached_push.split(raw)
            assert applied == pushes, (server, index, applied, pushes)
            assert len(floats) == meta.stored_bytes(index)


def test_the_mlp_layout_puts_chunks_on_every_server_for_every_job(memcached_pool):
    store = open_store(memcached_pool.url)
    flat = np.zeros(79_510, np.float32)  # the 784-100-10 MLP
    for _ in range(5):
        job_id = f"spread-{uuid.uuid4().hex[:8]}"
        store.set_weights(job_id, flat, writers=2)
        held = chunks_by_server(store, job_id)
        assert set(held) == set(memcached_pool.url.split("//")[1].split(","))
        assert all(len(chunks) >= CHUNKS_PER_SERVER for chunks in held.values()), held.keys()
        assert store.holdings(job_id) == {s: len(c) for s, c in held.items()}


def test_a_server_down_at_set_up_is_named_and_nothing_is_written(memcached_pool):
    down = f"127.0.0.1:{free_port()}"
    live = memcached_pool.url.split("//")[1].split(",")[:2]
    url = "memcached://" + ",".join([*live, down])
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "test_samples": 100,
                              "number_of_workers": 2, "store_url": url})
    job_id = f"down-{uuid.uuid4().hex[:8]}"
    with pytest.raises(StoreUnavailable) as e:
        job.create_job(open_store(url, timeout_s=1.0), config, job_id=job_id)
    assert f"server {down}" in str(e.value), e.value
    names = [keys.weights_meta(job_id), keys.weights_version(job_id), keys.record(job_id, keys.CONFIG),
             keys.record(job_id, keys.JOB), *keys.weights_chunks(job_id, 64)]
    for server in live:
        with closing(alone(server)) as client:
            assert client.get_many(names) == {}, server


def test_a_server_that_keeps_failing_stays_in_the_ring_and_every_failure_names_it(memcached_pool):
    down, live = f"127.0.0.1:{free_port()}", memcached_pool.url.split("//")[1].split(",")[0]
    client = PoolClient([tuple(s.split(":")) for s in (down, live)], connect_timeout=1, timeout=1)
    key = next(f"k{n}" for n in range(1000) if client.server_of(f"k{n}") == down)
    for _ in range(5):  # HashClient would have dropped it after retry_attempts and moved the key to the live one
        with pytest.raises(ServerFailed) as e:
            client.get(key)
        assert e.value.server == down and isinstance(e.value.error, OSError)
        assert client.server_of(key) == down
    assert sorted(client.hasher.nodes) == sorted(client.servers) == sorted([down, live])
    client.close()


def test_cas_many_answers_each_item_in_order_across_servers(memcached_pool):
    client = open_store(memcached_pool.url).client
    names = []  # 12 items that span every server: 12 random names miss one of 3 servers ~2 % of the time
    while len(names) < 12 or len({client.server_of(k) for k in names}) < 3:
        names = [*names[-11:], f"cas-{uuid.uuid4().hex[:8]}"]
    assert len(names) == 12 and len({client.server_of(k) for k in names}) == 3
    assert client.set_many({k: b"0" for k in names}, expire=60) == []
    tokens = client.gets_many(names)
    client.set(names[1], b"changed", expire=60)
    client.delete(names[2])
    items = [(k, b"1", tokens[k][1]) for k in names]
    assert client.cas_many(items, expire=60) == [True, False, None] + [True] * 9
    assert client.get_many(names) == {k: (b"changed" if k == names[1] else b"1") for k in names if k != names[2]}


def test_the_byte_meter_counts_the_pool_sockets(memcached_pool):
    store = open_store(memcached_pool.url)
    job_id = f"meter-{uuid.uuid4().hex[:8]}"
    flat = np.ones(79_510, np.float32)
    store.set_weights(job_id, flat)
    counter = meter.counter()
    sent, received = counter.sent, counter.received
    store.push_update(job_id, flat)
    store.get_weights(job_id)
    # a push sends every chunk and reads it first; the fetch reads every chunk again
    assert counter.sent - sent >= flat.nbytes and counter.received - received >= 2 * flat.nbytes


def test_the_job_clock_is_the_first_servers(memcached_pool):
    store = open_store(memcached_pool.url)
    first = memcached_pool.url.split("//")[1].split(",")[0]
    with closing(alone(first)) as client:
        theirs = int(client.stats()[b"time"])
    assert abs(store.server_time() - theirs) <= 1 and abs(store.server_time() - time.time()) < 3
    assert "first server" in store.server_clock


def test_a_resuming_worker_asks_one_chunk_of_each_server_not_the_whole_model(memcached_pool):
    with closing(open_store(memcached_pool.url, timeout_s=2.0)) as store:
        job_id = f"probe-{uuid.uuid4().hex[:8]}"
        store.set_weights(job_id, np.arange(79510, dtype=np.float32), writers=1)
        chunks = set(keys.weights_chunks(job_id, store._weights_meta(job_id).chunks))
        asked: list[str] = []
        real = store.client.get_many

        def get_many(names, *args, **kwargs):
            asked.extend(names)
            return real(names, *args, **kwargs)

        store.client.get_many = get_many
        store.recover_worker(job_id, 0)  # what every worker call does before it trains
        probed = [name for name in asked if name in chunks]
        assert sorted(store.client.server_of(name) for name in probed) == sorted(memcached_pool.url[12:].split(","))
        assert len(chunks) >= 3 * len(probed)  # a chunk per server, of at least three each

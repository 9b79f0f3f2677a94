"""Jobs through a real Redis Cluster: two workers reach the target, and a master killed mid-job fails over.

Each applied push's update is kept (support/push_recording.py); at the end, per chunk, the chunk's header holds
every push of both workers, and its values are the initial ones plus every applied update; the job's version is
the sum of the workers' pushes.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
import redis

from faasgd.config import load_config
from faasgd.errors import StoreUnavailable
from faasgd.job.status import read_status
from faasgd.local.services.redis_cluster import start_redis_cluster
from faasgd.store import keys, memcached_push, open_store
from support.push_recording import RecordingStore, run_two_workers

pytestmark = pytest.mark.integration


def config_for(url: str, **overrides):
    return load_config({}, {
        "dataset": "synthetic", "train_samples": 3000, "validation_samples": 300, "test_samples": 500,
        "hidden_sizes": [16], "batch_size": 20, "number_of_workers": 2, "n_fetch": 1, "n_push": 2,
        "max_epochs": 10, "target_accuracy": 0.85, "store_url": url, "store_timeout_s": 30.0, **overrides})


def assert_exact_sum_per_chunk(store: RecordingStore, job_id: str, init: np.ndarray, finals: list) -> None:
    """Version = the workers' pushes; per chunk: its header holds each worker's last push, its values are
    init + the applied updates."""
    inner = store.inner
    weights, version = inner.get_weights(job_id)
    pushes = {w: f["pushes"] for w, f in enumerate(finals)}
    assert version == sum(pushes.values()) == len(store.applied)
    assert {(p.worker, p.seq) for p in store.applied} == {(w, s) for w in pushes for s in range(1, pushes[w] + 1)}
    # the default rule, average: each push moves the weights delta / workers
    replayed = np.array(init, np.float64) + np.sum(store.updates(), axis=0, dtype=np.float64) / 2
    meta = inner._weights_meta(job_id)
    raw = inner.client.get_many(keys.weights_chunks(job_id, meta.chunks))
    for i in range(meta.chunks):
        header, _ = memcached_push.split(raw[keys.weights_chunk(job_id, i)])
        assert header == pushes, (i, header, pushes)
        np.testing.assert_allclose(weights[meta.span(i)], replayed[meta.span(i)], atol=1e-4, err_msg=f"chunk {i}")


def test_two_workers_reach_the_target_with_the_exact_sum_per_chunk(redis_cluster):
    config = config_for(redis_cluster.url)
    with open_store(redis_cluster.url, timeout_s=5.0) as inner:
        store = RecordingStore(inner)
        job_id, init, finals = run_two_workers(config, store)
        assert all(f is not None and f["state"] == "finished" for f in finals), finals
        result = inner.get_record(job_id, "result")
        assert result["state"] == "done" and result["reached_target"], result
        assert result["final_validation_accuracy"] >= 0.85
        assert result["clock"] == inner.server_clock
        assert_exact_sum_per_chunk(store, job_id, init, finals)


def master_of_chunk(group, store, job_id: str, index: int):
    """The server process of the master holding chunk `index` of the job."""
    name = store.client.cluster.get_node_from_key(store.client.placed[keys.weights_chunk(job_id, index)]).name
    return next(s for s in group.servers if name.endswith(f":{s.port}"))


def test_a_master_killed_mid_job_fails_over_and_the_job_keeps_the_exact_sum():
    group = start_redis_cluster(masters=3, replicas=1, node_timeout_ms=1000)
    killed = []
    try:
        config = config_for(group.url, max_epochs=6, target_accuracy=1.0)  # runs every epoch: pushes after the kill
        with open_store(group.url, timeout_s=2.0) as inner:
            store = RecordingStore(inner)

            def kill_a_master(job_id):
                deadline = time.monotonic() + 60
                while len(store.applied) < 20 and time.monotonic() < deadline:
                    time.sleep(0.01)
                victim = master_of_chunk(group, inner, job_id, 0)
                node = inner.client.cluster.get_node_from_key(inner.client.placed[keys.weights_chunk(job_id, 0)])
                assert inner.client._replicas_to_wait(node) == 1  # its writes were acknowledged by its replica
                os.kill(victim.pid, signal.SIGKILL)
                killed.append((victim.port, len(store.applied)))

            job_id, init, finals = run_two_workers(config, store, during=kill_a_master)
            assert killed and all(f is not None and f["state"] == "finished" for f in finals), finals
            assert len(store.applied) > killed[0][1] + 10  # the job went on after the kill
            assert store.outages and all(o.startswith(("store unavailable", "store timeout")) for o in store.outages)
            assert any(f"127.0.0.1:{killed[0][0]}" in o for o in store.outages), store.outages  # the shard, named
            promoted = master_of_chunk(group, inner, job_id, 0)
            assert promoted.port != killed[0][0]  # chunk 0 is served by the replica now
            assert_exact_sum_per_chunk(store, job_id, init, finals)
            assert inner.get_record(job_id, "result")["state"] == "done"
    finally:
        group.stop()


def test_a_master_without_a_replica_killed_fails_calls_naming_the_shard():
    """No replica to promote: pushes, fetches and record writes fail as StoreUnavailable naming the dead shard."""
    group = start_redis_cluster(masters=3, replicas=0, node_timeout_ms=1000)
    try:
        with open_store(group.url, timeout_s=1.0) as store:
            store.set_weights("j", np.zeros(1200, np.float32))
            victim = master_of_chunk(group, store, "j", 0)
            os.kill(victim.pid, signal.SIGKILL)
            store.client.failover_s = 1.0
            for call in (lambda: store.push_update("j", np.ones(1200, np.float32)), lambda: store.get_weights("j"),
                         lambda: store.client.set(keys.weights_chunk("j", 0), b"x")):
                with pytest.raises(StoreUnavailable) as e:
                    call()
                assert f"127.0.0.1:{victim.port}" in str(e.value)
    finally:
        group.stop()


def test_every_masters_client_hands_a_weight_chunk_to_the_socket_as_it_is(redis_cluster):
    with open_store(redis_cluster.url, timeout_s=5.0) as store:
        store.client.version()  # connects: a client per node
        chunk = bytes(range(256)) * 1250  # 320,000 bytes, as a chunk of the MLP's weights
        masters = store.client.cluster.get_primaries()
        assert len(masters) == 3
        for node in masters:
            pieces = node.redis_connection.connection_pool.make_connection().pack_commands([("SET", "k", chunk)])
            assert any(piece is chunk for piece in pieces), node.name  # not copied into one buffer


def status_keys_on(store, job_id: str) -> set[str]:
    """The nodes holding the records read_status reads first."""
    return {store.client.cluster.get_node_from_key(keys.record(job_id, name)).name
            for name in (keys.CONFIG, keys.JOB, keys.RESULT, keys.DONE, keys.LOST)}


def test_every_status_read_names_the_master_that_died_not_the_seed():
    """The runtime hands functions one seed node; a master without a replica dies and the cluster goes down: a
    status read of a job whose records the dead master holds, and one whose records only live masters hold (their
    CLUSTERDOWN reply names no node), both fail naming the dead master."""
    group = start_redis_cluster(masters=3, replicas=0, node_timeout_ms=1000)
    try:
        seed, victim = group.servers[0], group.servers[1]
        dead = f"127.0.0.1:{victim.port}"
        with open_store(f"redis-cluster://127.0.0.1:{seed.port}", timeout_s=1.0) as store:
            store.client.version()  # the slot map, learnt while every master answers
            jobs = [f"j{n}" for n in range(64)]
            on_dead = next(j for j in jobs if dead in status_keys_on(store, j))
            off_dead = next(j for j in jobs if dead not in status_keys_on(store, j))
            os.kill(victim.pid, signal.SIGKILL)
            seed_client = redis.Redis(port=seed.port)
            deadline = time.monotonic() + 20
            while seed_client.execute_command("CLUSTER INFO")["cluster_state"] != "fail":
                assert time.monotonic() < deadline, "the cluster never marked the dead master failed"
                time.sleep(0.1)
            seed_client.close()
            for job_id in (off_dead, on_dead, off_dead):
                with pytest.raises(StoreUnavailable) as e:
                    read_status(store, job_id)
                assert dead in str(e.value), (job_id, str(e.value))
                assert str(e.value).startswith(f"store unavailable: redis-cluster://127.0.0.1:{seed.port} "
                                               f"(node {dead} down; ")
    finally:
        group.stop()

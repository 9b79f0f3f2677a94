"""The store servers' own CPU count (ParameterStore.server_cpu_s) on real servers, against the kernel's count of the
same processes (/proc/<pid>/stat utime + stime): one Redis, one memcached, a memcached pool and a Redis Cluster (the
sum over every server)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import pytest

from faasgd.store import open_store

pytestmark = pytest.mark.integration
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def kernel_cpu_s(pids) -> float:
    """User + system CPU-seconds of the processes `pids` as the kernel counts them (/proc/<pid>/stat, in ticks)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()  # from field 3 (state) on
        total += int(fields[11]) + int(fields[12])  # fields 14 and 15: utime, stime
    return total * TICK_S


def keep_busy(store, job_id: str, rounds: int) -> None:
    """Make the servers work: write and read back a 400 KB parameter vector and a few records, `rounds` times."""
    weights = np.arange(100_000, dtype=np.float32)
    for index in range(rounds):
        store.set_weights(job_id, weights)
        store.get_weights(job_id)
        store.put_record(job_id, f"busy-{index % 8}", {"index": index})
        store.get_records(job_id, [f"busy-{i}" for i in range(8)])


def check_against_kernel(url: str, pids: list[int], rounds: int, also: list[int] = ()) -> tuple[float, float]:
    """The store's count over some work, checked against the kernel's count of its servers `pids`: (the count, the
    kernel's count of the processes `also` over the same work)."""
    store = open_store(url, timeout_s=5.0)
    job_id = f"cpu-{uuid.uuid4().hex[:10]}"
    try:
        kernel_before, also_before, told_before = kernel_cpu_s(pids), kernel_cpu_s(also), store.server_cpu_s()
        keep_busy(store, job_id, rounds)
        told_after, kernel_after, also_after = store.server_cpu_s(), kernel_cpu_s(pids), kernel_cpu_s(also)
    finally:
        store.close()
    told, kernel = told_after - told_before, kernel_after - kernel_before
    assert told > 0.05, told
    # the kernel's reading is in whole ticks per process (10 ms), taken just outside the store's own readings
    assert kernel - 2 * len(pids) * TICK_S - 0.02 * kernel <= told <= kernel + 2 * len(pids) * TICK_S, (told, kernel)
    return told, also_after - also_before


def test_a_servers_own_count_agrees_with_the_kernels(store_server):
    check_against_kernel(store_server.url, [store_server.pid], rounds=300)


def test_a_memcached_pool_counts_every_server(memcached_pool):
    check_against_kernel(memcached_pool.url, [s.pid for s in memcached_pool.servers], rounds=300)


def test_a_redis_cluster_counts_every_node_replicas_too(redis_cluster):
    pids = [s.pid for s in redis_cluster.servers]
    masters = pids[:len(pids) // 2]  # masters first
    told, masters_s = check_against_kernel(redis_cluster.url, pids, rounds=300, also=masters)
    # the replicas applied every write too: the count holds their CPU beyond the masters' (and their ticks)
    assert told > masters_s + 2 * len(masters) * TICK_S, (told, masters_s)

"""No lost update: 4 processes x 200 push_update calls against each real store; the sum must be exact.

Deltas are small integers, so float32 sums stay exact (all values stay far below 2**24) and any
lost or doubled update shows as a wrong value. Conflicts are printed, not asserted.
"""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
import pytest

from faasgd.store import open_store

pytestmark = pytest.mark.integration

WORKERS = 4
PUSHES = 200
LENGTH = 300_000  # three chunks at the default 131072 floats per chunk


def delta_of(worker: int) -> np.ndarray:
    """Worker k's delta: (k + 1) plus a per-element pattern, so a misplaced chunk shows too."""
    return ((worker + 1) + np.arange(LENGTH) % 7).astype(np.float32)


def push_many(url: str, job_id: str, worker: int, barrier, results) -> None:
    store = open_store(url, timeout_s=10.0)
    delta = delta_of(worker)
    barrier.wait(timeout=60)
    conflicts = retries = 0
    for _ in range(PUSHES):
        push = store.push_update(job_id, delta)
        conflicts, retries = conflicts + push.conflicts, retries + push.retries
    results.put((worker, conflicts, retries))
    store.close()


@pytest.mark.parametrize("kind", ["redis", "memcached"])
def test_no_lost_updates(kind, request):
    server = request.getfixturevalue(f"{kind}_server")
    store = open_store(server.url)
    job_id = f"concurrency-{kind}-{time.time_ns()}"
    start = (np.arange(LENGTH) % 1000).astype(np.float32)
    store.set_weights(job_id, start)

    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [ctx.Process(target=push_many, args=(server.url, job_id, k, barrier, results)) for k in range(WORKERS)]
    for p in procs:
        p.start()
    t0 = time.monotonic()
    try:
        stats = [results.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    elapsed = time.monotonic() - t0
    assert all(p.exitcode == 0 for p in procs)

    weights, version = store.get_weights(job_id)
    expected = start + PUSHES * sum(delta_of(k) for k in range(WORKERS))
    np.testing.assert_array_equal(weights, expected)
    assert version == WORKERS * PUSHES
    conflicts, retries = sum(s[1] for s in stats), sum(s[2] for s in stats)
    assert conflicts == store.read_counter(job_id, "conflicts")  # what the pushes saw is what the store counted
    assert conflicts > 0 and retries > 0  # the workers really raced
    request.node.user_properties += [("conflicts", conflicts), ("retries", retries), ("seconds", elapsed)]
    print(f"\n[concurrency] {kind}: {WORKERS}x{PUSHES} pushes of {LENGTH} floats in {elapsed:.1f}s, "
          f"conflicts={conflicts} retries={retries} per worker={sorted(stats)}")

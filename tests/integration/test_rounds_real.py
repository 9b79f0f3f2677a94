"""Synchronous rounds over a real redis-server and a real memcached (the session's fixtures)."""

from __future__ import annotations

import numpy as np
import pytest

from support.rounds_drive import (FAST, Killed, KillOnce, all_reduce, exchanges, expected_merge, in_threads, memory_url,
                                  new_job, values, vectors)
from faasgd.lambdaml.rounds import Exchange, ExchangeConfig, RoundState, RoundTimeout, run_rounds
from faasgd.lambdaml.rounds.wire import HEADER_BYTES
from faasgd.store import open_store
from faasgd.store.blobs import BLOB_CHUNK_BYTES

pytestmark = pytest.mark.integration

LENGTH = 300_001  # 1.2 MB: several blob chunks; 3 workers do not divide it


@pytest.fixture(params=["redis", "memcached"])
def url(request):
    return request.getfixturevalue(f"{request.param}_server").url


def test_reduce_and_reduce_scatter_give_the_same_bits_as_in_memory(url):
    assert 4 * LENGTH > 2 * BLOB_CHUNK_BYTES
    vecs = vectors(3, LENGTH, seed=11)
    want = expected_merge(vecs)
    for where in (url, memory_url()):
        for pattern in ("reduce", "reduce_scatter"):
            results = all_reduce(where, pattern, vecs)
            for merged, _ in results:
                assert merged.tobytes() == want.tobytes(), (where, pattern)
            if pattern == "reduce":
                assert results[0][1].bytes_read == 2 * (HEADER_BYTES + 4 * LENGTH)


def test_rounds_run_on_and_clear_behind_them(url):
    job, n, rounds = new_job(), 3, 4
    ex = exchanges(url, job, n, "reduce_scatter")
    vecs = vectors(n, 1000, seed=2)
    out = values(in_threads(n, lambda w: [ex[w].all_reduce(r, vecs[w] * (r + 1))[0] for r in range(rounds)]))
    for r in range(rounds):
        want = expected_merge([v * (r + 1) for v in vecs])
        assert all(o[r].tobytes() == want.tobytes() for o in out)
    assert ex[0].space.get_blob(job, "rounds:r1:m0of3") == b""  # round rounds-3 cleared, the last two kept
    assert len(ex[0].space.get_blob(job, "rounds:r2:m0of3")) == HEADER_BYTES + 4 * 334


def test_grad_avg_on_a_real_store_matches_memory_bit_for_bit(url):
    rng = np.random.default_rng(0)
    target = rng.standard_normal(50).astype(np.float32)

    def grad(w):  # a least-squares pull towards target, a different step per worker and batch
        return lambda p, i: (float(((p - target) ** 2).sum()), (p - target) * np.float32(1 + (w + i) % 3))

    finals = []
    for where in (url, memory_url()):
        ex = exchanges(where, new_job(), 3, "reduce")
        finals.append(values(in_threads(3, lambda w: run_rounds("grad_avg", RoundState(np.zeros(50, np.float32)),
                                                                 grad(w), ex[w], lr=0.1, rounds=6)))[0][0].params)
    assert finals[0].tobytes() == finals[1].tobytes()


def test_a_missing_worker_times_out_naming_it(url):
    ex = exchanges(url, new_job(), 3, "reduce_scatter", round_timeout_s=0.3)
    errors = in_threads(2, lambda w: ex[w].all_reduce(0, np.ones(10, np.float32)))
    assert all(isinstance(e, RoundTimeout) and e.missing == [2] for e in errors)


@pytest.mark.parametrize("victim,when", [
    (1, lambda op, name: op == "put"),  # right after its first contribution
    (0, lambda op, name: op == "put" and ":m" in name),  # right after writing its merged slice
])
def test_a_worker_killed_mid_round_re_enters_it(url, victim, when):
    job, n = new_job(), 3
    vecs = vectors(n, 20_001, seed=4)
    spaces = [open_store(url) for _ in range(n)]
    spaces[victim] = KillOnce(spaces[victim], when)
    cfg = ExchangeConfig(pattern="reduce_scatter", workers=n, **FAST)
    ex = [Exchange(spaces[w], job, w, cfg) for w in range(n)]

    def work(w):
        try:
            return ex[w].all_reduce(0, vecs[w])[0]
        except Killed:
            return ex[w].all_reduce(0, vecs[w])[0]

    merged = values(in_threads(n, work))
    assert spaces[victim].fired
    assert all(m.tobytes() == expected_merge(vecs).tobytes() for m in merged)

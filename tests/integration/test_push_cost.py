"""bench/push_cost.py against a real redis-server: every push is counted and timed, its pieces within it."""

from __future__ import annotations

import pytest

from faasgd.store import codec, redis_push
from support.bench_scripts import load_bench

pytestmark = pytest.mark.integration


bench = load_bench("push_cost")


@pytest.mark.parametrize("mode", ["blocking", "background"])
def test_each_push_is_timed_and_its_pieces_fit_inside_it(redis_server, mode):
    row = bench.measure(redis_server.url, mode, steps=30, period=10)
    assert row["pushes"] == 3
    assert row["push_ms"] > 0 and row["batches_us"] > 0 and row["steps_us"] > 0
    assert all(ms > 0 for ms in row["pieces_ms"].values()), row["pieces_ms"]
    assert sum(row["pieces_ms"].values()) <= row["push_ms"] * 1.01  # thread CPU clocks: pieces of the same calls


def test_the_bare_loop_pushes_nothing_and_the_store_functions_are_restored(redis_server):
    originals = [getattr(owner, name) for owner, name, _ in bench.PIECES]
    assert codec.add_into in originals and redis_push.exchange in originals  # the store's own functions
    row = bench.measure(redis_server.url, "none", steps=5, period=10)
    assert row["pushes"] == 0 and all(ms == 0 for ms in row["pieces_ms"].values())
    assert [getattr(owner, name) for owner, name, _ in bench.PIECES] == originals  # every wrapped one


def test_an_unknown_mode_is_refused_by_name(redis_server):
    with pytest.raises(ValueError, match="mode must be one of none, blocking, background"):
        bench.measure(redis_server.url, "sometimes", steps=5, period=10)

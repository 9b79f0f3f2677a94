"""bench/push_cost.py against a real redis-server: every push is counted and timed, its pieces within it."""

from __future__ import annotations

import pytest
import redis.client

from faasgd.store import codec
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
    originals = (redis.client.Pipeline.execute, codec.add_to_chunk, codec.decode_into)
    row = bench.measure(redis_server.url, "none", steps=5, period=10)
    assert row["pushes"] == 0 and all(ms == 0 for ms in row["pieces_ms"].values())
    assert (redis.client.Pipeline.execute, codec.add_to_chunk, codec.decode_into) == originals


def test_an_unknown_mode_is_refused_by_name(redis_server):
    with pytest.raises(ValueError, match="mode must be one of none, blocking, background"):
        bench.measure(redis_server.url, "sometimes", steps=5, period=10)

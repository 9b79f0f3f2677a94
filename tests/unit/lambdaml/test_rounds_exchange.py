"""Exchange.all_reduce over memory:// with one thread per worker: patterns, accounting, faults, re-entry."""

from __future__ import annotations

import time

import numpy as np
import pytest

from support.fake_clock import StepClock
from support.rounds_drive import (FAST, Killed, KillOnce, all_reduce, exchanges, expected_merge, in_threads, memory_url, new_job,
                                  values, vectors)
from faasgd.errors import ConfigError
from faasgd.lambdaml.rounds import Exchange, ExchangeConfig, RoundDataError, RoundTimeout
from faasgd.lambdaml.rounds.wire import HEADER_BYTES, MERGED, PART, Piece, encode, split
from faasgd.store import open_store


def part_name(round_no, writer, slice_index=0, slices=1, tag="rounds"):
    return Piece(PART, round_no, writer, slice_index, slices, 0, 0, 0).name(tag)


def merged_name(round_no, slice_index=0, slices=1, tag="rounds"):
    return Piece(MERGED, round_no, 0, slice_index, slices, 0, 0, 0).name(tag)


@pytest.mark.parametrize("workers,length", [(1, 5), (2, 1), (3, 2), (3, 1001), (4, 10)])
@pytest.mark.parametrize("op", ["mean", "sum"])
def test_reduce_and_reduce_scatter_give_the_same_bits(workers, length, op):
    vecs = vectors(workers, length, seed=workers * 100 + length)
    want = expected_merge(vecs, op)
    for pattern in ("reduce", "reduce_scatter"):
        for merged, _ in all_reduce(memory_url(), pattern, vecs, op=op):
            assert merged.dtype == np.float32 and merged.tobytes() == want.tobytes(), pattern


def test_the_merge_does_not_depend_on_arrival_order():
    """Workers arriving one by one in reverse order give the same bits as all at once."""
    vecs, url, job = vectors(3, 101, seed=5), memory_url(), new_job()
    ex = exchanges(url, job, 3, "reduce_scatter")
    late = {2: 0.0, 1: 0.02, 0: 0.04}

    def work(w):
        time.sleep(late[w])
        return ex[w].all_reduce(0, vecs[w])[0]

    for merged in values(in_threads(3, work)):
        assert merged.tobytes() == expected_merge(vecs).tobytes()


def test_split_covers_the_vector_in_contiguous_near_equal_slices():
    assert split(10, 3) == [(0, 4), (4, 3), (7, 3)]
    assert split(2, 3) == [(0, 1), (1, 1), (2, 0)]
    for length, n in [(1001, 4), (7, 7), (300_000, 3)]:
        bounds = split(length, n)
        assert sum(c for _, c in bounds) == length and max(c for _, c in bounds) - min(c for _, c in bounds) <= 1
        assert all(o == sum(c for _, c in bounds[:i]) for i, (o, _) in enumerate(bounds))


# ---- accounting ------------------------------------------------------------------------------
def test_bytes_per_worker_follow_the_documented_formulas():
    n, length = 3, 1001
    vecs = vectors(n, length)
    full = HEADER_BYTES + 4 * length
    reduce = [s for _, s in all_reduce(memory_url(), "reduce", vecs)]
    assert (reduce[0].bytes_written, reduce[0].bytes_read) == (full, (n - 1) * full)
    for s in reduce[1:]:
        assert (s.bytes_written, s.bytes_read) == (full, full)

    scatter = [s for _, s in all_reduce(memory_url(), "reduce_scatter", vecs)]
    for i, s in enumerate(scatter):
        mine = split(length, n)[i][1]
        assert s.bytes_written == n * HEADER_BYTES + 4 * length
        assert s.bytes_read == 2 * (n - 1) * HEADER_BYTES + 4 * (length + (n - 2) * mine)
        assert s.rounds == 1 and s.wait_s >= 0 and s.puts == n  # n - 1 slices out, one merged slice
    # reads: a reduce_scatter worker reads 2/N of what reduce's worker 0 reads (values; headers aside)
    values_read = [s.bytes_read - 2 * (n - 1) * HEADER_BYTES for s in scatter]
    assert sum(values_read) / n == pytest.approx(2 / n * (reduce[0].bytes_read - (n - 1) * HEADER_BYTES), rel=1e-3)


def test_stats_add_up_over_rounds():
    url, job = memory_url(), new_job()
    ex = exchanges(url, job, 2, "reduce")
    vecs = vectors(2, 50)
    totals = values(in_threads(2, lambda w: [ex[w].all_reduce(r, vecs[w])[1] for r in range(3)]))
    for per_round in totals:
        total = per_round[0] + per_round[1] + per_round[2]
        assert total.rounds == 3 and total.bytes_written == 3 * per_round[0].bytes_written
        assert total.wait_s == pytest.approx(sum(s.wait_s for s in per_round))


# ---- clearing --------------------------------------------------------------------------------
def test_a_round_is_cleared_two_rounds_later_and_re_entering_it_is_a_clear_error():
    url, job = memory_url(), new_job()
    ex = exchanges(url, job, 2, "reduce")
    vecs = vectors(2, 20)
    values(in_threads(2, lambda w: [ex[w].all_reduce(r, vecs[w]) for r in range(3)]))
    store = open_store(url)
    assert store.get_blob(job, merged_name(0)) == b"" and store.get_blob(job, part_name(0, 1)) == b""
    assert len(store.get_blob(job, merged_name(1))) == HEADER_BYTES + 80  # the last two rounds stay
    assert len(store.get_blob(job, merged_name(2))) == HEADER_BYTES + 80
    with pytest.raises(RoundDataError, match="round 0: .*already cleared") as e:
        ex[1].all_reduce(0, vecs[1])
    assert e.value.name == merged_name(0)


# ---- deadlines -------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
def test_a_worker_that_never_arrives_is_named_by_a_timeout_at_the_deadline(pattern):
    url, job = memory_url(), new_job()
    clocks = [StepClock(), StepClock()]
    cfg = ExchangeConfig(pattern=pattern, workers=3, round_timeout_s=2.0, poll_s=0.01, poll_max_s=0.2)
    ex = [Exchange(open_store(url), job, w, cfg, clock=clocks[w], sleep=clocks[w].sleep) for w in range(2)]
    with pytest.raises(RoundTimeout) as first:  # worker 1 first: worker 0 (and 2) never come in its time
        ex[1].all_reduce(7, np.ones(10, np.float32))
    with pytest.raises(RoundTimeout) as second:
        ex[0].all_reduce(7, np.ones(10, np.float32))
    assert second.value.missing == [2] and "round 7" in str(second.value) and "[2]" in str(second.value)
    assert first.value.missing == ([0] if pattern == "reduce" else [0, 2])  # alone: nobody else had come
    for clock in clocks:
        assert sum(clock.waits) == pytest.approx(2.0) and max(clock.waits) <= 0.2
    assert second.value.http_status == 504


def test_threads_time_out_within_the_deadline():
    url, job = memory_url(), new_job()
    ex = exchanges(url, job, 3, "reduce", round_timeout_s=0.3)
    start = time.monotonic()
    errors = in_threads(2, lambda w: ex[w].all_reduce(0, np.ones(4, np.float32)))
    assert time.monotonic() - start < 2.0
    assert [type(e) for e in errors] == [RoundTimeout, RoundTimeout]
    assert errors[0].missing == [2] and errors[1].missing == [0]


# ---- re-entry ----------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
@pytest.mark.parametrize("victim,when", [
    (1, lambda op, name: op == "get"),  # a contributor killed after writing, before the result
    (0, lambda op, name: op == "put" and ":m" in name),  # a merger killed right after writing its merged slice
])
def test_a_worker_killed_mid_round_re_enters_it_and_gets_the_same_result(pattern, victim, when):
    url, job, n = memory_url(), new_job(), 3
    vecs = vectors(n, 301, seed=3)
    cfg = ExchangeConfig(pattern=pattern, workers=n, **FAST)
    spaces = [open_store(url) for _ in range(n)]
    spaces[victim] = KillOnce(spaces[victim], when)
    ex = [Exchange(spaces[w], job, w, cfg) for w in range(n)]

    def work(w):
        try:
            return ex[w].all_reduce(0, vecs[w]), None
        except Killed:
            return ex[w].all_reduce(0, vecs[w]), "re-entered"

    results = values(in_threads(n, work))
    assert spaces[victim].fired and results[victim][1] == "re-entered"
    for (merged, _), _ in results:
        assert merged.tobytes() == expected_merge(vecs).tobytes()


def test_a_merger_re_entering_a_merged_round_skips_the_merge():
    url, job = memory_url(), new_job()
    vecs = vectors(2, 64)
    ex = exchanges(url, job, 2, "reduce")
    values(in_threads(2, lambda w: ex[w].all_reduce(0, vecs[w])))
    again, stats = ex[0].all_reduce(0, vecs[0] + 1)  # even with another vector: the round is merged once
    assert again.tobytes() == expected_merge(vecs).tobytes()
    assert stats.bytes_written == 0 and stats.gets == 1


def test_a_contribution_written_twice_counts_once():
    url, job, n = memory_url(), new_job(), 3
    vecs = vectors(n, 50, seed=9)
    clock = StepClock()
    cfg = ExchangeConfig(workers=n, round_timeout_s=0.5)
    early = Exchange(open_store(url), job, 1, cfg, clock=clock, sleep=clock.sleep)
    for _ in range(2):  # worker 1 enters round 0 twice before anyone else (and times out waiting)
        with pytest.raises(RoundTimeout):
            early.all_reduce(0, vecs[1])
    for merged, _ in all_reduce(url, "reduce", vecs, job_id=job):
        assert merged.tobytes() == expected_merge(vecs).tobytes()


# ---- bad objects -------------------------------------------------------------------------------
def test_a_garbage_contribution_is_an_error_naming_it():
    url, job = memory_url(), new_job()
    open_store(url).put_blob(job, part_name(0, 1), b"not a float vector at all")
    cfg = ExchangeConfig(workers=2, **FAST)
    with pytest.raises(RoundDataError, match=r"round 0: object 'rounds:r0:p0of1:w1' \(from worker 1\): not a rounds") as e:
        Exchange(open_store(url), job, 0, cfg).all_reduce(0, np.zeros(8, np.float32))
    assert e.value.worker_id == 1


def test_a_truncated_contribution_is_an_error_naming_it():
    url, job = memory_url(), new_job()
    good = encode(Piece(PART, 0, 1, 0, 1, 8, 0, 8), np.ones(8, np.float32))
    open_store(url).put_blob(job, part_name(0, 1), good[:-4])
    with pytest.raises(RoundDataError, match="rounds:r0:p0of1:w1.*28 bytes of values, expected 32"):
        Exchange(open_store(url), job, 0, ExchangeConfig(workers=2, **FAST)).all_reduce(0, np.zeros(8, np.float32))


@pytest.mark.parametrize("pattern", ["reduce", "reduce_scatter"])
def test_a_contribution_of_another_length_is_an_error_naming_it(pattern):
    url, job = memory_url(), new_job()
    ex = exchanges(url, job, 2, pattern, round_timeout_s=0.3)
    lengths = [10, 11]
    errors = in_threads(2, lambda w: ex[w].all_reduce(0, np.ones(lengths[w], np.float32)))
    assert isinstance(errors[0], RoundDataError)
    assert errors[0].worker_id == 1 and "of 11" in str(errors[0]) and "of 10" in str(errors[0])


def test_bad_arguments_are_config_errors_naming_the_field():
    space = open_store(memory_url())
    for kwargs, field in [({"pattern": "ring"}, "pattern"), ({"workers": 0}, "workers"), ({"op": "max"}, "op"),
                          ({"round_timeout_s": 0}, "round_timeout_s"), ({"poll_s": 1, "poll_max_s": 0.5}, "poll_max_s"),
                          ({"tag": "a b"}, "tag"), ({"workers": True}, "workers")]:
        with pytest.raises(ConfigError) as e:
            ExchangeConfig(**kwargs)
        assert e.value.field == field
    with pytest.raises(ConfigError, match="worker_id"):
        Exchange(space, "j", 2, ExchangeConfig(workers=2))
    ex = Exchange(space, "j", 0, ExchangeConfig())
    for bad in [np.ones(3), np.ones((2, 2), np.float32), [1.0, 2.0]]:
        with pytest.raises(ConfigError, match="vector"):
            ex.all_reduce(0, bad)
    with pytest.raises(ConfigError, match="round"):
        ex.all_reduce(-1, np.ones(3, np.float32))

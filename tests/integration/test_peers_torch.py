"""bench/peers.py's PyTorch rows, run as the bench runs them (a fresh process each), against this test's stopwatch.

Each row reports its time to target on CLOCK_MONOTONIC from the bench's reading just before it started the row's
process; the test reads the same clock around the whole call, so a row's time must lie in (0, the outer time].
One epoch at a lower target keeps the rows short; the full bench times 0.85 over 10 epochs.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from support.bench_scripts import load_bench

torch = pytest.importorskip("torch", reason="torch is not installed: the `bench` extra brings it "
                                             "(pip install -e '.[bench]'; `make test` installs it too)")

TARGET = 0.70  # one epoch of lr 0.1 reaches 0.80-0.83 from these weights; the initial weights are at 0.10


def timed_row(role: str) -> tuple[dict, float]:
    peers = load_bench("peers")
    started = time.monotonic()
    row = peers.in_subprocess(role, 1, TARGET)
    return row, time.monotonic() - started


def check_timed(row: dict, outer_s: float) -> None:
    assert "error" not in row, row.get("error")
    assert 0 < row["ready_s"] < row["time_to_target_s"] <= outer_s
    first, last = row["accuracies"][0], row["accuracies"][-1]
    assert first < 0.3 and last >= TARGET and last == row["final_accuracy"]
    assert row["samples_per_s"] > 0


def test_torch_starts_from_faasgd_weights_in_faasgd_layout():
    from faasgd import model

    peers_torch = load_bench("peers_torch")
    flat, _ = peers_torch.start_weights()
    assert np.array_equal(flat, model.init_params((784, 100, 10), np.random.default_rng(0)))
    net = peers_torch.torch_mlp(flat)
    assert np.array_equal(peers_torch.flat_params(net), flat)  # the layout round-trips: every W transposed back
    x = np.random.default_rng(1).random((64, 784), dtype=np.float32)
    with torch.no_grad():
        logits = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(logits, model.forward(flat, (784, 100, 10), x), rtol=1e-4, atol=1e-5)


def test_torch_row_lies_within_the_outer_stopwatch_and_follows_the_numpy_row():
    torch_row, outer_s = timed_row("torch")
    check_timed(torch_row, outer_s)
    assert len(torch_row["peak_rss_mb"]) == 1
    numpy_row, outer_s = timed_row("numpy")
    assert 0 < numpy_row["ready_s"] < numpy_row["time_to_target_s"] <= outer_s
    # the same start weights and epoch order: one epoch apart only by float32 rounding
    assert abs(torch_row["final_accuracy"] - numpy_row["final_accuracy"]) < 0.005


def test_ddp_row_time_to_target_lies_within_the_outer_stopwatch_and_its_ranks_agree():
    row, outer_s = timed_row("torch-ddp")
    check_timed(row, outer_s)
    assert len(row["peak_rss_mb"]) == 2
    first, second = row["param_digests"]
    assert first == second  # DDP's all-reduce kept both ranks' parameters bit for bit equal

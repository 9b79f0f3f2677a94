"""The one evaluation (job.model_file.accuracy_on): the same figure whether raw rows are scaled into a reused buffer."""

from __future__ import annotations

import numpy as np

from faasgd import data, model
from faasgd.job import model_file


def test_raw_rows_scaled_into_one_reused_buffer_give_the_same_accuracy():
    rng = np.random.default_rng(0)
    rows = 2 * model_file.EVAL_CHUNK + 37  # two full chunks and a short one
    shard = data.Shard(x=rng.integers(0, 256, (rows, 20), dtype=np.uint8), y=rng.integers(0, 3, rows), n_classes=3,
                       input_dim=20, total=rows, start=0, stop=rows)
    sizes = (20, 8, 3)
    weights = model.init_params(sizes, rng)
    scratch = model_file.eval_scratch(shard)
    assert scratch.shape == (model_file.EVAL_CHUNK, 20) and scratch.dtype == np.float32
    scaled = data.Shard(**{**shard.__dict__, "x": shard.x.astype(np.float32) / np.float32(255)})
    expected = model.accuracy(weights, sizes, scaled.x, scaled.y)
    assert model_file.accuracy_on(shard, weights, sizes, "tanh", scratch=scratch) == expected
    assert model_file.accuracy_on(shard, weights, sizes, "tanh") == expected
    last = shard.x[2 * model_file.EVAL_CHUNK:]  # the buffer holds the last chunk: it was written, not a copy's
    np.testing.assert_array_equal(scratch[:len(last)], last.astype(np.float32) / np.float32(255))
    assert model_file.eval_scratch(scaled) is None  # rows already float32 are evaluated as they are

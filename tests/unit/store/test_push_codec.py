"""Compressed pushes (store/push_codec.py): error feedback loses no mass, top-k sends the largest entries,
bad codecs are ConfigErrors naming push_codec, and a worker's compressed pushes land as exactly their sum."""

import math

import numpy as np
import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store, push_codec
from faasgd.store.push_codec import parse_codec


def dyadic_updates(length: int, count: int, seed: int) -> list[np.ndarray]:
    """Updates of multiples of 2**-10 below 64 in magnitude: every float32 sum of them is exact, so "no mass
    lost" can be checked bit for bit; half precision (11 bits) still has to round most of them."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-65536, 65536, length) / 1024.0).astype(np.float32) for _ in range(count)]


@pytest.mark.parametrize("spec", ["f16", "topk:0.01", "topk:0.3"])
def test_error_feedback_loses_no_mass(spec):
    codec, length = parse_codec(spec), 3001
    residual, pushed, total = np.zeros(length, np.float32), np.zeros(length, np.float32), np.zeros(length, np.float32)
    for update in dyadic_updates(length, 12, seed=1):
        total += update
        pushed += push_codec.as_delta(codec.encode(update.copy(), residual), length)
    np.testing.assert_array_equal(pushed + residual, total)  # sum of pushed + residual = sum of updates
    assert np.count_nonzero(residual) > 0  # something was held back: the check is not vacuous


def test_topk_sends_the_largest_entries_and_keeps_the_rest():
    codec, length = parse_codec("topk:0.01"), 2500
    update = np.random.default_rng(2).standard_normal(length).astype(np.float32)
    residual = np.zeros(length, np.float32)
    payload = codec.encode(update.copy(), residual)
    k = math.ceil(0.01 * length)
    assert payload.indices.size == k and payload.nbytes == 8 * k
    assert set(payload.indices.tolist()) == set(np.argsort(-np.abs(update))[:k].tolist())
    np.testing.assert_array_equal(payload.values, update[payload.indices])
    assert (residual[payload.indices] == 0).all()
    assert np.abs(residual).max() <= np.abs(payload.values).min()
    # the next push sends what was held back plus the new update: error feedback
    second = codec.encode(np.zeros(length, np.float32), residual)
    np.testing.assert_array_equal(second.values, update[second.indices])
    assert not set(second.indices.tolist()) & set(payload.indices.tolist())


@pytest.mark.parametrize("spec, length, k", [("topk:0.07", 100, 7), ("topk:0.29", 100, 29), ("topk:0.07", 101, 8)])
def test_topk_sends_the_ceiling_of_the_decimal_fraction(spec, length, k):
    payload = parse_codec(spec).encode(np.arange(1, length + 1, dtype=np.float32), np.zeros(length, np.float32))
    assert payload.indices.size == k  # 0.07 x 100 is 7.000000000000001 in floats: ceil of that would send 8


def test_the_canonical_codec_parses_back_to_the_same_fraction():
    codec = parse_codec("topk:0.0123456789")
    assert str(codec) == "topk:0.0123456789" and parse_codec(str(codec)) == codec
    assert load_config({}, {"push_codec": "topk:0.0123456789"}).push_codec == "topk:0.0123456789"


def test_f16_halves_the_bytes_and_keeps_the_rounding_error():
    codec, length = parse_codec("f16"), 1000
    update = np.random.default_rng(3).standard_normal(length).astype(np.float32) * 1e-3
    update[0] = 1e6  # beyond half's range: sent clipped, the rest stays behind
    residual = np.zeros(length, np.float32)
    payload = codec.encode(update.copy(), residual)
    assert payload.nbytes == 2 * length == push_codec.payload_bytes(update) // 2
    sent = push_codec.as_delta(payload, length)
    assert sent[0] == push_codec.F16_MAX and residual[0] == np.float32(1e6) - np.float32(push_codec.F16_MAX)
    np.testing.assert_array_equal(sent + residual, update)
    assert 0 < np.abs(residual[1:]).max() <= np.abs(update[1:]).max() * 2 ** -11


def test_f32_is_the_update_itself():
    update, residual = np.ones(5, np.float32), np.zeros(5, np.float32)
    assert parse_codec("f32").encode(update, residual) is update and not parse_codec("f32").compresses


@pytest.mark.parametrize("bad", ["topk:0", "topk:2", "topk:1", "topk:-0.1", "topk:", "topk:abc", "topk:nan", "f8",
                                 "", 16, None])
def test_bad_codecs_name_the_field(bad):
    with pytest.raises(ConfigError) as e:
        parse_codec(bad)
    assert e.value.field == "push_codec"


def test_config_key_checked_and_canonical():
    assert load_config({}, {"push_codec": " TOPK:0.010 "}).push_codec == "topk:0.01"
    assert load_config({"push_codec": "f16"}).push_codec == "f16"
    assert load_config({}).push_codec == "f32"
    for bad in ("topk:0", "topk:2", "f8"):
        with pytest.raises(ConfigError) as e:
            load_config({}, {"push_codec": bad})
        assert e.value.field == "push_codec" and bad in str(e.value)
    with pytest.raises(ConfigError) as e:  # synchronous rounds exchange whole objects: no push to compress
        load_config({}, {"algorithm": "grad_avg", "model": "lr", "dataset": "higgs-like", "push_codec": "f16"})
    assert e.value.field == "push_codec"


@pytest.mark.parametrize("spec, communication", [("f16", "background"), ("topk:0.05", "background"),
                                                  ("topk:0.05", "coalesce")])
def test_a_workers_compressed_pushes_land_as_exactly_their_sum(spec, communication):
    """One worker training with a codec: the store's weights are the initial ones plus every decoded push (float32,
    in order), each applied once; the record counts the bytes handed over and fetched."""
    config = load_config({}, {
        "dataset": "synthetic", "train_samples": 800, "test_samples": 200, "hidden_sizes": [8], "batch_size": 40,
        "update_rule": "sum", "number_of_workers": 1, "n_fetch": 2, "n_push": 2, "max_epochs": 2,
        "target_accuracy": 1.0, "store_url": f"memory://codec-{spec.replace(':', '-')}-{communication}", "push_codec": spec,
        "communication": communication})
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    start = store.get_weights(job_id)[0]
    sent, push = [], store.push_update

    def spy(job_id, delta, *args, **kwargs):
        sent.append(push_codec.as_delta(delta, start.size))
        return push(job_id, delta, *args, **kwargs)

    store.push_update = spy
    final = run_worker(Call(config, store, job_id, 0))
    weights, version = store.get_weights(job_id)
    expected = start.copy()
    for delta in sent:
        expected += delta
    np.testing.assert_array_equal(weights, expected)
    assert version == final["pushes"] == len(sent) > 0
    per_push = 2 * start.size if spec == "f16" else 8 * math.ceil(0.05 * start.size)
    assert final["push_bytes"] == per_push * final["pushes"]
    assert final["fetch_bytes"] >= 4 * start.size * final["pushes"]

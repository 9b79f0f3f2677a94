"""The client side of the server-side sparse add (store/redis_sparse.py): pairs split by chunk, the rule's
constants, and the fallback to the client-side add on a server without functions (fakeredis has no Lua)."""

from __future__ import annotations

import fakeredis
import numpy as np

from faasgd.store import UpdateRule, codec, open_store, push_codec, redis_sparse

PAIR = redis_sparse.PAIR


def test_pairs_split_by_chunk_with_chunk_relative_indices():
    meta = codec.WeightsMeta(length=25, chunk_floats=10)
    sparse = push_codec.Sparse(25, np.array([0, 9, 10, 24], np.uint32), np.array([1, 2, 3, 4], np.float32))
    blobs = redis_sparse.pairs_by_chunk(sparse, meta)
    pairs = [np.frombuffer(b, PAIR) for b in blobs]
    assert [p["index"].tolist() for p in pairs] == [[0, 9], [0], [4]]
    assert [p["value"].tolist() for p in pairs] == [[1.0, 2.0], [3.0], [4.0]]
    assert all(len(b) == 8 * p.size for b, p in zip(blobs, pairs))  # 8 bytes a pair, little-endian
    assert blobs[1] == np.uint32(0).tobytes() + np.float32(3).tobytes()
    empty = push_codec.Sparse(25, np.array([11], np.uint32), np.array([5], np.float32))
    assert [len(b) for b in redis_sparse.pairs_by_chunk(empty, meta)] == [0, 8, 0]  # untouched chunks: nothing


def test_rule_constants_are_the_float32_values_the_client_path_uses():
    assert redis_sparse.rule_arguments(UpdateRule("sum")) == ["sum", "0.0", "0.0"]
    assert redis_sparse.rule_arguments(UpdateRule("average", workers=3)) == ["average", "3.0", "0.0"]
    name, lr, eps = redis_sparse.rule_arguments(UpdateRule("adagrad", learning_rate=0.1, eps=1e-6))
    assert (name, float(lr), float(eps)) == ("adagrad", float(np.float32(-0.1)), float(np.float32(1e-6)))
    assert float(lr) != -0.1  # the float32 nearest -0.1, not the double


def test_only_small_enough_sparse_pushes_go_to_the_server():
    adder = redis_sparse.ServerAdd()
    few = push_codec.Sparse(10, np.array([1], np.uint32), np.ones(1, np.float32))
    many = push_codec.Sparse(redis_sparse.MAX_PAIRS + 1, np.arange(redis_sparse.MAX_PAIRS + 1, dtype=np.uint32),
                             np.ones(redis_sparse.MAX_PAIRS + 1, np.float32))
    assert adder.takes(few) and not adder.takes(many)
    assert not adder.takes(np.ones(10, np.float32)) and not adder.takes(push_codec.Half(np.ones(10, np.float16)))


def test_a_server_without_functions_keeps_the_client_side_add():
    store = open_store("redis://127.0.0.1:6379/0", client=fakeredis.FakeRedis(), chunk_floats=10)
    store.set_weights("j", np.zeros(25, np.float32))
    sparse = push_codec.Sparse(25, np.array([2, 24], np.uint32), np.array([1.5, -2.0], np.float32))
    assert store.push_update("j", sparse).version == 1
    assert not store._server_add.supported  # remembered: the next push goes straight to the client path
    assert store.push_update("j", sparse).version == 2
    got = store.get_weights("j")[0]
    assert (got[2], got[24], np.count_nonzero(got)) == (3.0, -4.0, 2)

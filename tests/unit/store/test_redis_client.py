"""The Redis store's client: large values go to the socket as they are; replies are parsed by hiredis."""

from __future__ import annotations

import pytest

from faasgd.store import open_store


def _connection():
    return open_store("redis://127.0.0.1:1/0").client.connection_pool.make_connection()  # nothing connects


def test_a_weight_chunk_is_handed_to_the_socket_as_it_is_not_copied_into_one_buffer():
    chunk = bytes(range(256)) * 1250  # 320,000 bytes: a chunk of the MLP's weights
    pieces = _connection().pack_commands([("MSET", "w:0", chunk, "w:1", b"small")])
    assert any(piece is chunk for piece in pieces)
    assert b"".join(bytes(p) for p in pieces).count(chunk) == 1


def test_small_arguments_are_still_packed_as_the_redis_protocol():
    (packed,) = _connection().pack_commands([("SET", "k", b"v", "EX", 5)])
    assert packed == b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$1\r\n5\r\n"


def test_replies_are_parsed_by_hiredis_when_it_is_installed():
    pytest.importorskip("hiredis")
    from redis._parsers import _HiredisParser

    assert isinstance(_connection()._parser, _HiredisParser)


def test_a_push_packs_its_commands_as_redis_py_would_with_the_chunk_left_as_it_is():
    import numpy as np

    from faasgd.store import redis_push

    chunk = memoryview(np.arange(80_000, dtype=np.float32)).cast("B")  # a view of the worker's own buffer
    commands = [("MULTI",), ("SET", "w:0", chunk, "EX", 3600), ("SET", "p:0", b'{"a":1}', "EX", 3600),
                ("INCRBY", "c", 2), ("EXEC",)]
    pieces = redis_push.pack(commands)
    assert any(piece is chunk for piece in pieces)  # not copied
    as_redis_py = b"".join(bytes(p) for p in _connection().pack_commands(
        [tuple(bytes(a) if isinstance(a, memoryview) else a for a in c) for c in commands]))
    assert b"".join(bytes(p) for p in pieces) == as_redis_py
    assert len(pieces) == 3  # the small arguments before the chunk, the chunk, everything after it

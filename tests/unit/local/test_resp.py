"""faasgd.local.services.resp: the few RESP2 replies starting a Redis Cluster needs, read from bytes as a server sends them."""

import io

import pytest

from faasgd.local.services import resp


def read(data: bytes):
    return resp.read_reply(io.BytesIO(data))


def test_every_reply_kind_reads_as_redis_sent_it():
    assert read(b"+OK\r\n") == b"OK"
    assert read(b":16384\r\n") == 16384
    assert read(b"$5\r\nab\r\nc\r\n") == b"ab\r\nc"  # a bulk string is read by its length, not its lines
    assert read(b"$-1\r\n") is None and read(b"*-1\r\n") is None
    assert read(b"*2\r\n$12\r\ncluster-port\r\n$5\r\n16379\r\n") == [b"cluster-port", b"16379"]
    assert read(b"*2\r\n*1\r\n:1\r\n+x\r\n") == [[1], b"x"]


def test_an_error_reply_raises_and_a_cut_reply_is_a_connection_error():
    with pytest.raises(resp.ReplyError, match="ERR Unknown node"):
        read(b"-ERR Unknown node abc\r\n")
    with pytest.raises(ConnectionError):
        read(b"+O")
    with pytest.raises(ConnectionError):
        read(b"?what\r\n")


def test_commands_are_sent_as_arrays_of_bulk_strings():
    assert resp.encode(("CLUSTER", "MEET", "127.0.0.1", 7000, 17000)) == \
        b"*5\r\n$7\r\nCLUSTER\r\n$4\r\nMEET\r\n$9\r\n127.0.0.1\r\n$4\r\n7000\r\n$5\r\n17000\r\n"

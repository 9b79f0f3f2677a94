"""The dense push's commands on one redis-py connection, without redis-py's Pipeline.

A push is two writes and their replies: WATCH + MGET, then MULTI / SET ... / INCR / EXEC (redis_store.py says
what each holds). redis-py's Pipeline sends the same commands, but around them it keeps a command stack, runs a
callback and an observability hook per reply: 1.32-1.64 ms of client CPU a push with it, 1.12-1.45 without, in a
worker's setting (bench/push_cost.py; docs/explanation/performance.md, "What communication costs"). Here the
commands are packed by `pack` (a weight chunk goes to the socket uncopied, from the worker's own buffer:
codec.add_into) and their replies parsed by the connection's own parser (hiredis), and nothing else runs;
redis-py still owns the socket, the connection's set-up (AUTH, the database) and its reconnection.

A connection is given back to its pool only in step with the server: every reply of an exchange read, no WATCH
left standing (EXEC and UNWATCH clear them). After anything else (a lost connection, a timeout, an error reply,
an exception of the caller's between the two writes) it is disconnected, so the next user starts afresh.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from faasgd.store.redis_lib import redis


@contextlib.contextmanager
def connection(client) -> Iterator:
    """One connection of `client`'s pool for one push; disconnected unless the block ends cleanly."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        yield conn
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)


def pack(commands: list[tuple]) -> list:
    """`commands` in RESP (arrays of bulk strings), as few pieces as the values allow: the small arguments joined into
    one bytes object, each memoryview (a weight chunk) a piece of its own, sent as it is. Arguments are bytes,
    memoryviews (cast to bytes), str (UTF-8) or int; what redis-py's packer does with ~10 Python calls an argument,
    in one: a push's commands in ~30 µs, not ~150."""
    pieces: list = []
    small: list[bytes] = []
    for command in commands:
        small.append(b"*%d\r\n" % len(command))
        for arg in command:
            if isinstance(arg, memoryview):
                small.append(b"$%d\r\n" % arg.nbytes)
                pieces.append(b"".join(small))
                pieces.append(arg)
                small = [b"\r\n"]
                continue
            if isinstance(arg, str):
                arg = arg.encode()
            elif isinstance(arg, int):
                arg = b"%d" % arg
            small.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    pieces.append(b"".join(small))
    return pieces


def exchange(conn, commands: list[tuple]) -> list:
    """Send `commands` in one write and read one reply for each. An error reply (a refused command, EXECABORT) is
    raised once every reply has been read: the first one, which names the cause."""
    conn.send_packed_command(pack(commands))
    replies, errors = [], []
    for _ in commands:
        try:
            replies.append(conn.read_response())
        except redis.ResponseError as error:
            replies.append(error)
            errors.append(error)
    if errors:
        raise errors[0]
    return replies

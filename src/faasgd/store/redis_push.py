"""The dense push's commands on one redis-py connection, without redis-py's Pipeline.

A push is two writes and their replies: WATCH + MGET, then MULTI / SET ... / INCR / EXEC (redis_store.py says
what each holds). redis-py's Pipeline sends the same commands, but around them it keeps a command stack, runs a
callback and an observability hook per reply: 1.32-1.64 ms of client CPU a push with it, 1.12-1.45 without, in a
worker's setting (bench/push_cost.py; docs/explanation/performance.md, "What communication costs"). Here the
commands are packed by the connection's own packer (a weight chunk still goes to the socket uncopied,
redis_store.py) and its replies parsed by its own parser (hiredis), and nothing else runs; redis-py still owns
the socket, the connection's set-up (AUTH, the database) and its reconnection.

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


def exchange(conn, commands: list[tuple]) -> list:
    """Send `commands` in one write and read one reply for each. An error reply (a refused command, EXECABORT) is
    raised once every reply has been read: the first one, which names the cause."""
    conn.send_packed_command(conn.pack_commands(commands))
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

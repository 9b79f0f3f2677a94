"""A few Redis commands over a socket, for joining the nodes of a Redis Cluster the local runtime starts.

The local runtime speaks no store client of its own (faasgd.local knows no store library: an import contract,
pyproject.toml), and joining a cluster takes a handful of commands whose replies are simple
strings, integers, bulk strings and arrays of them: this is that much of RESP2, one connection per command.
"""

from __future__ import annotations

import socket

from faasgd.local.services.stores import LOOPBACK


class ReplyError(Exception):
    """The server answered a command with an error (`-ERR ...`)."""


def command(port: int, password: str | None, *args: str | int, timeout_s: float = 5.0):
    """One command on 127.0.0.1:port, after AUTH with `password`: its reply as bytes, int, list or None."""
    with socket.create_connection((LOOPBACK, port), timeout=timeout_s) as sock:
        reader = sock.makefile("rb")
        for request in ((("AUTH", password),) if password else ()) + (args,):
            sock.sendall(encode(request))
            reply = read_reply(reader)
        return reply


def encode(args) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def read_reply(reader):
    """The next reply on `reader`; ReplyError for an error reply, ConnectionError when the server hung up."""
    line = reader.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError(f"the server closed the connection mid-reply ({line[:80]!r})")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body
    if kind == b"-":
        raise ReplyError(body.decode(errors="replace"))
    if kind == b":":
        return int(body)
    if kind == b"$":
        return None if int(body) < 0 else reader.read(int(body) + 2)[:-2]
    if kind == b"*":
        return None if int(body) < 0 else [read_reply(reader) for _ in range(int(body))]
    raise ConnectionError(f"not a Redis reply: {line[:80]!r}")


def info(port: int, password: str | None, *args: str) -> dict[str, str]:
    """INFO or CLUSTER INFO's `key:value` lines as a dict (`args`: the command, e.g. ("INFO", "replication"))."""
    text = command(port, password, *args).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))

"""Bytes to and from the stores, counted at the clients' sockets, per thread.

Every socket a store client opens (redis-py's connections, pymemcache's pooled clients) is wrapped in a
`CountingSocket`, which adds what each `send`/`sendall` wrote and each `recv`/`recv_into` read to the
counter of the thread making the call. Counting at the socket, not in the store's methods, gives the
bytes on the wire (protocol framing, retries and reconnects included), the same on one machine and on a
cluster. Counting per thread lets several workers that share one client (a warm replica's
`replica_cache.store_for`) each see their own traffic: a worker's profile sums the counters of its
training thread and its communication thread (profile/sampler.py).

A counter is written only by its own thread (no lock, no lost increments) and read by anyone. A thread
gets a fresh counter the first time it counts (thread-local), registered by its ident, so a new thread
that reuses a dead thread's ident never inherits its bytes; `Counter.born` says when it was made.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Iterable


class Counter:
    """Bytes one thread sent to and received from store sockets."""

    __slots__ = ("sent", "received", "born")

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0
        self.born = time.monotonic()


_local = threading.local()
_by_thread: dict[int, Counter] = {}  # thread ident -> the counter of the live thread with that ident


def counter() -> Counter:
    """The calling thread's counter (made and registered on first use)."""
    mine = getattr(_local, "counter", None)
    if mine is None:
        mine = _local.counter = Counter()
        _by_thread[threading.get_ident()] = mine
    return mine


def counter_of(ident: int) -> Counter | None:
    """The counter of the thread with this ident, if it has counted anything."""
    return _by_thread.get(ident)


def totals(idents: Iterable[int]) -> tuple[int, int]:
    """(sent, received) bytes summed over the threads `idents`."""
    sent = received = 0
    for ident in idents:
        found = _by_thread.get(ident)
        if found is not None:
            sent, received = sent + found.sent, received + found.received
    return sent, received


class CountingSocket:
    """A socket whose sends and receives are counted for the calling thread; everything else is the socket's."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def sendall(self, data, *args) -> None:
        self._sock.sendall(data, *args)
        counter().sent += memoryview(data).nbytes

    def send(self, data, *args) -> int:
        sent = self._sock.send(data, *args)
        counter().sent += sent
        return sent

    def recv(self, size: int, *args) -> bytes:
        data = self._sock.recv(size, *args)
        if not args or not args[0] & socket.MSG_PEEK:  # a peek reads nothing off the wire yet
            counter().received += len(data)
        return data

    def recv_into(self, buffer, size: int = 0, *args) -> int:
        read = self._sock.recv_into(buffer, size, *args)
        if not args or not args[0] & socket.MSG_PEEK:
            counter().received += read
        return read

    def __getattr__(self, name: str) -> Any:  # settimeout, setsockopt, fileno, shutdown, close, ...
        return getattr(self._sock, name)


class CountingSocketModule:
    """The `socket` module with `socket()` making counting sockets: pymemcache's `socket_module` hook."""

    def socket(self, *args, **kwargs) -> CountingSocket:
        return CountingSocket(socket.socket(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(socket, name)


COUNTING_SOCKET_MODULE = CountingSocketModule()


def count_redis(client) -> None:
    """Make every connection `client`'s pool opens from now on count its bytes (call before the first command)."""
    pool = client.connection_pool
    base = pool.connection_class
    if not getattr(base, "counts_bytes", False):
        pool.connection_class = type("Counting" + base.__name__, (base,), {
            "counts_bytes": True, "_connect": lambda self: CountingSocket(base._connect(self))})

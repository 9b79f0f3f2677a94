"""A pool of memcached servers as one client: every key lives on one server, chosen by hashing, for good.

pymemcache's HashClient spreads keys over servers by rendezvous hashing (each key goes to the server scoring
highest for it; the ring depends only on the servers' `host:port` names, never on their order). By default it
marks a server that keeps failing as dead and REMOVES it from the ring, so that server's keys silently move to
another one, where they are missing (or, once it is back, stale): a job would train on lost chunks. `PoolClient`
never does that: a key's server never changes while the client lives, and any failure is raised at once as
`ServerFailed`, naming the server of the key that failed, for the store to map (memcached_pool_store.py).

What HashClient lacks is here too: `version` and `stats` per server (`version` asks every server: a ping of
the whole pool; `stats` asks the first server named, whose clock is the job's) and `server_of(key)`.

`spread_chunk_floats` picks a job's chunk size so that its weight chunks land on every server, a few each.
"""

from __future__ import annotations

import collections
from typing import Callable, Protocol

from pymemcache.client.hash import HashClient

from faasgd.store import keys, meter
from faasgd.store.url import StoreUrl

CHUNKS_PER_SERVER = 3  # weight chunks each server holds at least, when the model is long enough
MAX_SEARCH = 4096  # chunk counts tried beyond the first before settling for the first


class ServerRing(Protocol):
    """What the pool store asks of its client besides memcached's commands: the servers and whose key is whose."""

    servers: list[str]  # every server named, `host:port`, in the URL's order

    def server_of(self, key: str) -> str: ...

    def client_of(self, server: str): ...


class ServerFailed(Exception):
    """A call to one server of the pool failed; `server` is its `host:port`, `error` what the call raised."""

    def __init__(self, server: str, error: BaseException):
        self.server, self.error = server, error
        super().__init__(f"server {server}: {type(error).__name__}: {error}")


def server_name(server) -> str:
    """`host:port` of a pymemcache server spec ((host, port) or a path)."""
    return "%s:%s" % tuple(server) if isinstance(server, (tuple, list)) else str(server)


class PoolClient(HashClient):
    """HashClient whose ring never changes: no server is ever marked dead, every error is raised naming it."""

    def __init__(self, servers: list[tuple[str, int]], **options):
        options.update(use_pooling=True, ignore_exc=False, retry_attempts=0, dead_timeout=float("inf"))
        super().__init__(servers, **options)
        self.servers = [server_name(s) for s in servers]

    def _safely_run_func(self, client, func, default_val, *args, **kwargs):
        """Run `func` on `client`; any failure is raised as ServerFailed (the ring is left as it is)."""
        try:
            return func(*args, **kwargs)
        except Exception as error:
            raise ServerFailed(server_name(client.server), error) from error

    def _safely_run_set_many(self, client, values, *args, **kwargs):
        """set_many on one server: the keys it refused (too large), or ServerFailed."""
        try:
            return client.set_many(values, *args, **kwargs)
        except Exception as error:
            raise ServerFailed(server_name(client.server), error) from error

    def server_of(self, key: str) -> str:
        """`host:port` of the server holding `key`."""
        return self.hasher.get_node(key)

    def client_of(self, server: str):
        """The pooled client of one server (`host:port`), for asking it alone."""
        return self.clients[server]

    def version(self) -> dict[str, bytes]:
        """Every server's version, asked one by one: a ping of the whole pool, naming the first that fails."""
        return {name: self._safely_run_func(self.clients[name], self.clients[name].version, None)
                for name in self.servers}

    def stats(self, *args) -> dict:
        """`stats` of the first server named (the pool's clock: the job's timestamps come from one server)."""
        first = self.clients[self.servers[0]]
        return self._safely_run_func(first, first.stats, {}, *args)


def connect_pool(url: StoreUrl, timeout_s: float) -> PoolClient:
    """A thread-safe client of every server `url` names (lazy; values are bytes: no serde), each connection
    counting its bytes like the one-server client's (store/meter.py)."""
    return PoolClient(
        list(url.nodes),
        default_noreply=False,  # every write is confirmed
        connect_timeout=timeout_s,
        timeout=timeout_s,
        socket_module=meter.COUNTING_SOCKET_MODULE,
    )


def placement(job_id: str, count: int, server_of: Callable[[str], str]) -> collections.Counter:
    """How many of a job's `count` weight chunks each server holds."""
    return collections.Counter(server_of(k) for k in keys.weights_chunks(job_id, count))


def spread_chunk_floats(job_id: str, length: int, limit: int, servers: list[str],
                        server_of: Callable[[str], str], per_server: int = CHUNKS_PER_SERVER) -> int:
    """Weights per chunk for a job of `length` weights (at most `limit`) so that every server holds at least
    `per_server` of its chunks (or one each, for a model too short for that).

    The chunk keys' servers are fixed by the ring, so the smallest chunk count from servers x per_server up whose
    keys land that way is found by trying counts in turn (deterministic: the same job id and servers give the same
    layout). A model of fewer weights than servers cannot reach every server: it keeps one weight per chunk.
    """
    if length <= len(servers):
        return 1
    least = min(per_server, length // len(servers))
    first = max(len(servers) * least, -(-length // limit))
    for count in range(first, min(length, first + MAX_SEARCH) + 1):
        floats = min(limit, -(-length // count))
        held = placement(job_id, -(-length // floats), server_of)
        if len(held) == len(servers) and min(held.values()) >= least:
            return floats
    return min(limit, -(-length // first))

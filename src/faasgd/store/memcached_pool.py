"""A pool of memcached servers as one client: every key lives on one server, chosen by hashing, for good.

pymemcache's HashClient spreads keys over servers by rendezvous hashing (each key goes to the server scoring
highest for it; the ring depends only on the servers' `host:port` names, never on their order). By default it
marks a server that keeps failing as dead and REMOVES it from the ring, so that server's keys silently move to
another one, where they are missing (or, once it is back, stale): a job would train on lost chunks. `PoolClient`
never does that: a key's server never changes while the client lives, and any failure is raised at once as
`ServerFailed`, naming the server of the key that failed, for the store to map (memcached_pool_store.py).

Multi-key commands (get_many, gets_many, set_many, and cas_many: a cas of each of several items) ask every
server's share at the same time, one thread per extra server, so a fetch of chunks spread over N servers takes
about the slowest server's time, not the sum.

What HashClient lacks is here too: `version` and `stats` per server (`version` asks every server: a ping of
the whole pool; `stats` asks the first server named, whose clock is the job's) and `server_of(key)`.

`spread_chunk_floats` picks a job's chunk size so that its weight chunks land on every server, a few each.
"""

from __future__ import annotations

import collections
import threading
from concurrent.futures import ThreadPoolExecutor
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
        self._threads: ThreadPoolExecutor | None = None  # made at the first multi-key call spanning servers
        self._threads_lock = threading.Lock()

    # ---- multi-key commands: each server's share at once ------------------------------------------------------
    def get_many(self, keys, gets=False, *args, **kwargs) -> dict:
        """The values of `keys` that are there (with cas tokens when `gets`); every server's share asked at once."""
        found: dict = {}
        for part in self._fan_out({
            server: lambda client, mine=mine: (client.gets_many if gets else client.get_many)(mine, *args, **kwargs)
            for server, mine in self._batches(keys).items()
        }).values():
            found.update(part)
        return found

    get_multi = get_many

    def set_many(self, values: dict, *args, **kwargs) -> list:
        """Set every item, every server's share at once; the keys refused (too large)."""
        done = self._fan_out({
            server: lambda client, mine=mine: client.set_many({k: values[k] for k in mine}, *args, **kwargs)
            for server, mine in self._batches(values).items()
        })
        return [key for refused in done.values() for key in refused]

    set_multi = set_many

    def cas_many(self, items: list[tuple], expire: int = 0) -> list:
        """cas of each (key, value, token): every server's share at once, each server's in order; per item True
        (stored), False (changed since it was read) or None (gone), in the order of `items`."""
        order = self._batches(range(len(items)), lambda i: items[i][0])
        done = self._fan_out({
            server: lambda client, mine=mine: [client.cas(*items[i], expire=expire, noreply=False) for i in mine]
            for server, mine in order.items()
        })
        outcome: list = [None] * len(items)
        for server, results in done.items():
            for index, result in zip(order[server], results):
                outcome[index] = result
        return outcome

    def _batches(self, names, key_of=lambda name: name) -> dict[str, list]:
        """`names` grouped by the server holding each (`key_of(name)` its key), in the order given."""
        batches: dict[str, list] = {}
        for name in names:
            batches.setdefault(server_name(self._get_client(key_of(name)).server), []).append(name)
        return batches

    def _fan_out(self, calls: dict) -> dict:
        """Run each server's call (a function of its client): the first on this thread, the others on the pool's
        threads at the same time; their results by server. What the other threads sent and received is added to
        this thread's byte counter (store/meter.py), whose they are. A failure: the ServerFailed of the first
        server that failed, raised once every call has ended."""
        items = list(calls.items())
        if not items:
            return {}
        pending = [(server, self._executor().submit(self._counted, server, call)) for server, call in items[1:]]
        results, failures, mine = {}, [], meter.counter()
        try:
            results[items[0][0]] = self._call(*items[0])
        except ServerFailed as error:
            failures.append(error)
        for server, future in pending:
            try:
                results[server], sent, received = future.result()
                mine.sent, mine.received = mine.sent + sent, mine.received + received
            except ServerFailed as error:
                failures.append(error)
        if failures:
            raise failures[0]
        return results

    def _call(self, server: str, call: Callable):
        client = self.clients[server]
        return self._safely_run_func(client, call, None, client)

    def _counted(self, server: str, call: Callable) -> tuple:
        """(the call's result, bytes it sent, bytes it received), run on one of the pool's threads."""
        counter = meter.counter()
        sent, received = counter.sent, counter.received
        result = self._call(server, call)
        return result, counter.sent - sent, counter.received - received

    def _executor(self) -> ThreadPoolExecutor:
        with self._threads_lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(max(1, len(self.servers) - 1), "faasgd-memcached-pool")
            return self._threads

    def close(self) -> None:
        """Close every server's connections and end the pool's threads."""
        super().close()
        with self._threads_lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=False)

    def _safely_run_func(self, client, func, default_val, *args, **kwargs):
        """Run `func` on `client`; any failure is raised as ServerFailed (the ring is left as it is)."""
        try:
            return func(*args, **kwargs)
        except Exception as error:
            raise ServerFailed(server_name(client.server), error) from error

    def server_of(self, key: str) -> str:
        """`host:port` of the server holding `key`."""
        return self.hasher.get_node(key)

    def version(self) -> dict[str, bytes]:
        """Every server's version, asked one by one: a ping of the whole pool, naming the first that fails."""
        return {name: self._safely_run_func(self.clients[name], self.clients[name].version, None)
                for name in self.servers}

    def stats(self, *args) -> dict:
        """`stats` of the first server named (the pool's clock: the job's timestamps come from one server)."""
        first = self.clients[self.servers[0]]
        return self._safely_run_func(first, first.stats, {}, *args)

    def stats_of_each(self) -> dict[str, dict]:
        """Every server's `stats`, asked one by one (ServerFailed naming the first that fails)."""
        return {name: self._safely_run_func(self.clients[name], self.clients[name].stats, {}) for name in self.servers}


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

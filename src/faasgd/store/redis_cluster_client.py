"""A Redis Cluster behind the few calls of a memcached client that the Memcached push algorithm makes.

redis_cluster_store.py runs memcached_push.py's exactly-once pushes over a cluster; this module gives it
the compare-and-set it relies on. `gets` returns a value with its token (the SHA-1 of the value) and `cas`
is a Lua script on the key's master that writes only while the stored value still hashes to that token.
Comparing values, not counters, is safe here: every value written by cas is a function of the value read,
so a value that changed and changed back is indistinguishable from one that never changed.

Reads go through redis-py's RedisCluster (mget_nonatomic: one MGET per slot, not one atomic snapshot;
redirections and a failed-over master handled by redis-py). Writes are queued per master on one connection
of that master, followed by `WAIT n` when `wait_replicas` asks for it: a write is acknowledged only once n
replicas hold it, so a failover that promotes one of them keeps it (the default, see redis_cluster_store).
A write a master refuses before running it (MOVED, ASK, TRYAGAIN, CLUSTERDOWN during a failover) is sent
again after the slot map is refreshed, until `failover_s` has passed; a connection lost while a write was in
flight leaves its outcome unknown: StoreUnavailable (or StoreTimeout) naming the shard, and the caller's
resend with the same push id completes only what is missing.

Chunk keys can be placed: `place(logical, physical)` maps a key name to one carrying a hash tag that pins
it to a chosen slot (redis_cluster_store.py spreads a job's chunks over every master that way).
"""

from __future__ import annotations

import hashlib
import threading
import time

from faasgd.store.redis_lib import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from faasgd.errors import ConfigError, StoreTimeout, StoreUnavailable
from faasgd.store import meter
from faasgd.store.redis_store import send_large_values_as_they_are

CAS = """local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if redis.sha1hex(cur) ~= ARGV[1] then return 0 end
if tonumber(ARGV[3]) > 0 then redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1"""
INCR_IF_EXISTS = """if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('INCRBY', KEYS[1], ARGV[1])"""
PROBE_S = 1.0  # how long `failing` waits for each node's answer
FAILING = {"fail", "fail?"}  # CLUSTER NODES flags of a node the cluster holds down, or one node suspects
REFUSED = ("MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN")  # error replies of a command the node did not run


def token(value: bytes | None) -> str | None:
    return None if value is None else hashlib.sha1(value).hexdigest()


def count_bytes(cluster: RedisCluster) -> None:
    """Count the bytes of every node's connections (store/meter.py), of the nodes known now and of those the
    cluster client learns later (it makes a client per node, through create_redis_node); each node's client packs
    commands as RedisStore's does (a weight chunk to the socket as it is: redis_store.send_large_values_as_they_are)."""
    manager = cluster.nodes_manager
    for node in manager.nodes_cache.values():
        if node.redis_connection is not None:
            meter.count_redis(node.redis_connection)
            send_large_values_as_they_are(node.redis_connection)
            node.redis_connection.connection_pool.reset()  # the connections made before: new ones count
    create = manager.create_redis_node

    def counted(*args, **kwargs):
        client = create(*args, **kwargs)
        meter.count_redis(client)
        send_large_values_as_they_are(client)
        return client

    manager.create_redis_node = counted


class ClusterClient:
    """The memcached-like calls over a RedisCluster made on first use (open_store does not connect)."""

    def __init__(self, url: str, nodes, username: str | None, password: str | None, timeout_s: float,
                 wait_replicas: int | None = None, wait_timeout_ms: int = 1000, failover_s: float = 15.0):
        self.url, self.wait_replicas, self.wait_timeout_ms, self.failover_s = url, wait_replicas, wait_timeout_ms, failover_s
        self._node_options = dict(username=username, password=password, socket_timeout=timeout_s,
                                  socket_connect_timeout=timeout_s)  # how any one node is reached
        self._options = dict(startup_nodes=[ClusterNode(h, p) for h, p in nodes], **self._node_options)
        self._cluster: RedisCluster | None = None
        self._lock = threading.Lock()
        self.placed: dict[str, str] = {}  # logical key -> key with a hash tag
        self._replicas: dict[str, int] = {}  # master name -> replicas its writes wait for

    @property
    def cluster(self) -> RedisCluster:
        with self._lock:
            if self._cluster is None:
                self._cluster = self._connect()
            return self._cluster

    def _connect(self) -> RedisCluster:
        try:
            cluster = RedisCluster(**self._options)
        except redis.RedisClusterException as e:
            if "not enabled" in str(e):
                raise ConfigError("store_url", f"{self.url} names a Redis server that is not in cluster mode "
                                               f"(use redis://): {e}") from None
            raise StoreUnavailable(self.url, f"{type(e).__name__}: {e}") from None
        count_bytes(cluster)
        return cluster

    def place(self, logical: str, physical: str) -> None:
        self.placed[logical] = physical

    def _key(self, name: str) -> str:
        return self.placed.get(name, name)

    # ---- reads ------------------------------------------------------------------------------------
    def get_many(self, names: list[str]) -> dict[str, bytes]:
        if not names:
            return {}
        values = self.cluster.mget_nonatomic([self._key(n) for n in names])
        return {n: v for n, v in zip(names, values) if v is not None}

    def get(self, name: str) -> bytes | None:
        return self.get_many([name]).get(name)

    def gets_many(self, names: list[str]) -> dict[str, tuple[bytes, str]]:
        return {n: (v, token(v)) for n, v in self.get_many(names).items()}

    def gets(self, name: str) -> tuple[bytes | None, str | None]:
        value = self.get(name)
        return value, token(value)

    # ---- writes (per master, then WAIT) ----------------------------------------------------------
    def cas(self, name: str, value: bytes, cas_token: str, expire: int = 0, noreply: bool = False) -> bool | None:
        """True: written; False: the value changed since `cas_token`; None: the key is gone."""
        return self.cas_many([(name, value, cas_token)], expire)[0]

    def cas_many(self, items: list[tuple[str, bytes, str]], expire: int = 0) -> list[bool | None]:
        """cas of each (name, value, token), one round trip (and one WAIT) per master."""
        done = self._write([(name, "EVAL", CAS, 1, self._key(name), cas_token, value, int(expire))
                            for name, value, cas_token in items])
        return [{1: True, 0: False}.get(int(d)) for d in done]

    def add(self, name: str, value: bytes, expire: int = 0, noreply: bool = False) -> bool:
        (done,) = self._write([(name, *self._set(name, value, expire), "NX")])
        return bool(done)

    def set(self, name: str, value: bytes, expire: int = 0, noreply: bool = False) -> bool:
        self._write([(name, *self._set(name, value, expire))])
        return True

    def set_many(self, values: dict[str, bytes], expire: int = 0, noreply: bool = False) -> list[str]:
        self._write([(name, *self._set(name, value, expire)) for name, value in values.items()])
        return []

    def incr(self, name: str, by: int, noreply: bool = False) -> int | None:
        (value,) = self._write([(name, "EVAL", INCR_IF_EXISTS, 1, self._key(name), int(by))])
        return None if value is None else int(value)

    def touch(self, name: str, expire: int = 0, noreply: bool = False) -> bool:
        (done,) = self._write([(name, "EXPIRE", self._key(name), int(expire)) if expire else
                               (name, "PERSIST", self._key(name))])
        return bool(done)

    def delete(self, name: str, noreply: bool = False) -> bool:
        (done,) = self._write([(name, "DEL", self._key(name))])
        return bool(done)

    def _set(self, name: str, value: bytes, expire: int) -> tuple:
        return ("SET", self._key(name), value, *(("EX", int(expire)) if expire else ()))

    def _write(self, commands: list[tuple]) -> list:
        """Run each (name, *command) on its key's master, a WAIT after each master's batch; replies in order."""
        replies: dict[int, object] = {}
        pending = list(range(len(commands)))
        deadline = time.monotonic() + self.failover_s
        while pending:
            by_node: dict[str, list[int]] = {}
            nodes = {}
            for i in pending:
                node = self.cluster.get_node_from_key(self._key(commands[i][0]))
                by_node.setdefault(node.name, []).append(i)
                nodes[node.name] = node
            pending, refusing = [], []
            for name, indexes in by_node.items():
                refused = self._write_on(nodes[name], [commands[i] for i in indexes], indexes, replies)
                pending, refusing = pending + refused, refusing + ([name] if refused else [])
            if pending:
                if time.monotonic() >= deadline:
                    raise StoreUnavailable(self.url, f"shard {', '.join(refusing)} refused writes for "
                                                     f"{self.failover_s:.0f}s (the cluster is down or failing over)")
                time.sleep(0.1)
                self._refresh()
        return [replies[i] for i in range(len(commands))]

    def _write_on(self, node, commands: list[tuple], indexes: list[int], replies: dict) -> list[int]:
        """Run `commands` on `node`; the indexes it refused before running them (to be sent again)."""
        try:
            waiting = self._replicas_to_wait(node)
            with self.cluster.get_redis_connection(node).pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command[1:])
                if waiting:
                    pipe.execute_command("WAIT", waiting, self.wait_timeout_ms)
                results = pipe.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError, OSError) as e:
            self._refresh()
            kind = StoreTimeout if isinstance(e, redis.TimeoutError) else StoreUnavailable
            raise kind(self.url, f"shard {node.name}: {type(e).__name__}: {e}; "
                                 f"{len(commands)} write(s) may or may not have been applied") from e
        refused = []
        for i, result in zip(indexes, results):
            if isinstance(result, redis.ResponseError) and str(result).startswith(REFUSED) or \
                    isinstance(result, (redis.exceptions.ClusterError, redis.ConnectionError)):
                refused.append(i)
            elif isinstance(result, Exception):
                raise result
            else:
                replies[i] = result
        if waiting and len(results) > len(commands) and not isinstance(results[-1], Exception) \
                and int(results[-1]) < waiting and len(refused) < len(commands):
            raise StoreUnavailable(self.url, f"shard {node.name}: writes not acknowledged by {waiting} replica(s) "
                                             f"within {self.wait_timeout_ms} ms (a failover could lose them)")
        return refused

    def _replicas_to_wait(self, node) -> int:
        """WAIT for this many replicas: `wait_replicas`, or (None) 1 when the master has a replica connected
        (asked once per master, again after the slot map changes)."""
        if self.wait_replicas is not None:
            return self.wait_replicas
        if node.name not in self._replicas:
            info = self.cluster.get_redis_connection(node).info("replication")
            self._replicas[node.name] = min(1, int(info.get("connected_slaves", 0)))
        return self._replicas[node.name]

    def _refresh(self) -> None:
        """Learn the slot map again (a failover promoted a replica, or a slot moved)."""
        self._replicas.clear()
        try:
            self.cluster.nodes_manager.initialize()
        except (redis.RedisError, OSError):
            pass  # no node answers yet: the next call fails or refreshes again

    # ---- the rest ---------------------------------------------------------------------------------
    def version(self) -> None:
        self.cluster.ping(target_nodes=RedisCluster.PRIMARIES)

    def clock_node(self):
        """The master serving slot 0: the node whose TIME is the store's clock."""
        return self.cluster.nodes_manager.get_node_from_slot(0)

    def time(self) -> tuple[int, int]:
        return self.cluster.time(target_nodes=self.clock_node())

    def infos(self, section: str) -> list[dict]:
        """`INFO section` of every node CLUSTER NODES lists, masters and replicas, each asked on a connection of its
        own (the slot map names a replica only once it has replicated something: it may not know them all)."""
        found = []
        for address in self.cluster.cluster_nodes():
            host, port = address.rsplit(":", 1)
            node = redis.Redis(host=host, port=int(port), **self._node_options)
            try:
                found.append(node.info(section))
            finally:
                node.close()
        return found

    def failing(self) -> list[str]:
        """The nodes to blame for a call that failed, by address: the masters of the slot map that do not answer,
        and the nodes the first master that answers flags as failing (CLUSTER NODES: `fail`, or `fail?` before the
        others agree), each asked once (no retry) within PROBE_S (a hung master costs the failed call that much
        more). A read of keys held by live masters fails too once the cluster is down (CLUSTERDOWN, redis' full
        coverage): only the flags name the node that died then. [] before the slot map is known."""
        if self._cluster is None:
            return []
        blamed: set[str] = set()
        told, probe_s = False, min(PROBE_S, self._node_options["socket_timeout"])
        for name in sorted({holders[0].name for holders in self._cluster.nodes_manager.slots_cache.values() if holders}):
            host, port = name.rsplit(":", 1)
            node = redis.Redis(host=host, port=int(port), retry=Retry(NoBackoff(), 0), **{
                **self._node_options, "socket_timeout": probe_s, "socket_connect_timeout": probe_s})
            try:
                if told:
                    node.ping()
                else:
                    flags = node.execute_command("CLUSTER NODES")
                    blamed.update(address for address, seen in flags.items()
                                  if FAILING & set(seen["flags"].split(",")))
                    told = True
            except (redis.RedisError, OSError):
                blamed.add(name)
            finally:
                node.close()
        return sorted(blamed)

    def masters(self) -> list:
        """The masters, by the first slot each serves."""
        first: dict[str, int] = {}
        for slot, holders in self.cluster.nodes_manager.slots_cache.items():
            if holders:
                first[holders[0].name] = min(slot, first.get(holders[0].name, slot))
        by_name = {n.name: n for n in self.cluster.get_primaries()}
        return [by_name[name] for name in sorted(first, key=first.get) if name in by_name]

    def close(self) -> None:
        with self._lock:
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None

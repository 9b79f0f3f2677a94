"""redis-cluster://[[user]:password@]H:P[,H:P...] — parameters and records in a Redis Cluster.

The cluster runs the Memcached store's algorithm (memcached_store.py, memcached_push.py), because a cluster
has the same limit: no transaction across keys of different slots. Keys are the same; a push with an id
writes its copy (`p:{w}:*`), adds its slice to each chunk whose header does not hold it yet by
compare-and-set, then commits the worker's record: each chunk gets each push exactly once, a resend or
`recover_worker` (roll-forward from the copy) completes a push cut off half-way, and the version is
derived from the writers' records. The compare-and-set is a Lua script on the chunk's master
(redis_cluster_client.py); the adding happens on the worker, as on plain Redis.

Spread: the chunks of a job are spread over every master. At set_weights the store asks the cluster for
its masters (M, by the first slot each serves) and, when the configured chunk size would give fewer than
CHUNKS_PER_MASTER * M chunks, makes the chunks smaller so there are that many. Chunk i is pinned by a hash
tag to a slot of master i mod M; the tags are written into the weights' meta (`spread`), so every client
uses the placement made at set_weights, whatever happens to the cluster later (a failover keeps the slots
with the promoted replica; a resharding would move chunks, never lose them).

Not atomic: a fetch is one MGET per slot (mget_nonatomic), so it may see a push in some chunks and not yet
in others, and a version that lags the chunks by the pushes in flight. Downpour SGD tolerates this
staleness, as on Memcached. A push is atomic per chunk, not across chunks.

Durability: a master acknowledges to Redis clients before its replica has the write, so a failover can lose
the last acknowledged writes, and a lost chunk write under a committed record would break the exact sum
silently. So by default every write is followed by WAIT 1 on shards that have a replica (the write is
acknowledged once a replica holds it; a master that cannot get that acknowledgement within 1 s fails the
call naming the shard, and the worker's retry with the same push id completes the push). `wait_replicas=0`
turns that off. After a failover the promoted master has no replica until one rejoins: writes go on without
WAIT there (the cluster keeps serving rather than stop).

Errors name the node that failed, not only the URL's seeds: a call the cluster refuses or cannot finish is a
StoreUnavailable (StoreTimeout) whose detail starts with the masters that do not answer and the nodes the cluster
flags as failing (ClusterClient.failing) — once a master without a replica dies the cluster is down, and a read
of keys held by the live masters fails with a reply (CLUSTERDOWN) that names no node at all.

The job clock is TIME of the master serving slot 0 (1 µs); after a failover, of the replica promoted in its
place. Bytes are counted at the client's sockets (store/meter.py), every node's.
"""

from __future__ import annotations

import json
import socket

from faasgd.store.redis_lib import redis
from redis.crc import key_slot

from faasgd.errors import StoreError, StoreTimeout, StoreUnavailable
from faasgd.store import codec, keys, server_cpu
from faasgd.store.memcached_store import MemcachedStore
from faasgd.store.redis_cluster_client import ClusterClient
from faasgd.store.update_rule import UpdateRule
from faasgd.store.url import StoreUrl

CHUNKS_PER_MASTER = 4  # chunks a job has on each master at least (when it has that many weights)
SPREAD = "spread"  # the weights' meta field with each chunk's hash tag


def connect(url: StoreUrl, password: str | None, timeout_s: float, wait_replicas: int | None = None) -> ClusterClient:
    """The client for `url` (lazy: the cluster is asked for its slots on the first call)."""
    return ClusterClient(url.masked, url.nodes, url.username, password, timeout_s, wait_replicas=wait_replicas)


def tagged(key: str, tag: str) -> str:
    """`key` with a hash tag: a cluster places it by `tag` alone."""
    return f"{key}{{{tag}}}"


def tag_for(job_id: str, slots: set[int]) -> str:
    """The first tag `job_id.n` whose slot is one of `slots`."""
    n = 0
    while key_slot(f"{job_id}.{n}".encode()) not in slots:
        n += 1
    return f"{job_id}.{n}"


class RedisClusterStore(MemcachedStore):
    """ParameterStore over a Redis Cluster; `client` is a ClusterClient (redis_cluster_client.py)."""

    clock_resolution_s = 1e-6
    server_clock = "redis TIME of the cluster master serving slot 0 (1 µs)"

    def _map(self, error: BaseException, detail: str = "") -> StoreError | None:
        """The StoreError for a redis-py or socket exception (this backend's one mapping table)."""
        text = f"{type(error).__name__}: {error}" + (f"; {detail}" if detail else "")
        if isinstance(error, redis.AuthenticationError):
            return StoreUnavailable(self.url, f"authentication failed ({error})")
        if isinstance(error, (redis.TimeoutError, socket.timeout, TimeoutError)):
            return StoreTimeout(self.url, self._blaming(text))
        if isinstance(error, (redis.ConnectionError, redis.exceptions.ClusterError,
                              redis.exceptions.RedisClusterException, OSError)):
            return StoreUnavailable(self.url, self._blaming(text))
        if isinstance(error, redis.RedisError):
            return StoreError(self.url, text)
        return None

    def _blaming(self, text: str) -> str:
        """`text` led by the nodes that failed (ClusterClient.failing): the URL names only the seeds, and once
        the cluster is down a read of a live master's keys fails with a reply that names no node."""
        failing = self.client.failing()
        if not failing:
            return text
        return f"{'node' if len(failing) == 1 else 'nodes'} {', '.join(failing)} down; {text}"

    def _ping(self) -> None:
        self.client.version()

    def _server_time(self) -> float:
        seconds, micros = self.client.time()
        return seconds + micros / 1e6

    def _chunk_floats(self, job_id: str, length: int, rule: UpdateRule) -> int:
        per = super()._chunk_floats(job_id, length, rule)
        with self._errors():
            wanted = CHUNKS_PER_MASTER * len(self.client.masters())
        if -(-length // per) < wanted:
            per = max(1, -(-length // wanted))
        return per

    def _write_weights(self, job_id: str, meta: bytes, chunks: list[bytes], version: int, ttl_s: int) -> None:
        spread = self._spread(job_id, len(chunks))
        self._place(job_id, spread)
        meta = json.dumps({**json.loads(meta), SPREAD: spread}).encode()
        super()._write_weights(job_id, meta, chunks, version, ttl_s)

    def _spread(self, job_id: str, count: int) -> list[str]:
        """A hash tag for each of `count` chunks: chunk i on master i mod M."""
        owned: dict[str, set[int]] = {}
        for slot, holders in self.client.cluster.nodes_manager.slots_cache.items():
            if holders:
                owned.setdefault(holders[0].name, set()).add(slot)
        tags = [tag_for(job_id, owned[m.name]) for m in self.client.masters()]
        return [tags[i % len(tags)] for i in range(count)]

    def _place(self, job_id: str, spread: list[str]) -> None:
        for index, tag in enumerate(spread):
            name = keys.weights_chunk(job_id, index)
            self.client.place(name, tagged(name, tag))

    def _read_meta(self, job_id: str, raw: bytes, meta: codec.WeightsMeta) -> None:
        """The chunks' placement, from the meta set_weights wrote (it never changes for a job)."""
        spread = self._decode(lambda r: json.loads(r).get(SPREAD) or [], raw, job_id)
        if not isinstance(spread, list) or len(spread) != meta.chunks or not all(isinstance(t, str) for t in spread):
            raise StoreError(self.url, f"job {job_id!r}: the weights' meta has no valid chunk spread")
        self._place(job_id, spread)

    def _server_cpu_s(self) -> float | None:
        """Every node's INFO cpu (masters and replicas) used_cpu_user + used_cpu_sys, summed (None when one has none,
        or refuses INFO)."""
        try:
            return server_cpu.total(server_cpu.redis_cpu_s(info) for info in self.client.infos("cpu"))
        except redis.ResponseError:
            return None

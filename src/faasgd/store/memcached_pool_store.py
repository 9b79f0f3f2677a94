"""memcached://H1:P1,H2:P2,... — one store over several memcached servers (memcached_pool.py's client).

Everything memcached_store.py does works unchanged over the pool: each key (a weight chunk, the version, a
worker's record, a push's copy) lives on one server, and the per-chunk CAS path of memcached_push.py applies a
push chunk by chunk, exactly once, whichever server each chunk is on. What the pool adds:

- Spread: a job's chunk size is chosen at set_weights so that every server holds a few of its chunks
  (memcached_pool.spread_chunk_floats), recorded in the weights meta like any layout; the default one chunk
  of 131,072 floats would put a whole MLP on one server.
- Set-up: set_weights first asks every server for its version; one that does not answer fails the job's
  creation naming it, before anything is written.
- Errors name the server: a timeout, a refused or closed connection on one server is StoreTimeout /
  StoreUnavailable with `server host:port` in its detail. Keys never move to another server (no server is
  dropped from the ring), so a server that stops answering fails the calls needing it, never reroutes them.
- Lost state names the server: a server that restarted empty (or evicted) lost the job's keys it held; a
  read or push that finds chunks missing (or the job's meta or version gone) asks every server for the job's
  chunks (or, with its layout unknown, its meta, version and first chunks) and raises StateLost naming the servers that
  lost theirs while others kept theirs (each server holds chunks: the spread above). All gone: JobNotFound.
- The clock: `stats` time of the first server named (whole seconds, as on one server).

Every client of a job must name the servers alike (the same `host:port` strings): the ring is built from them.
"""

from __future__ import annotations

import contextlib

import numpy as np

from faasgd.errors import JobNotFound, StateLost, StoreError
from faasgd.store import keys, server_cpu
from faasgd.store.memcached_pool import CHUNKS_PER_SERVER, ServerFailed, spread_chunk_floats
from faasgd.store.memcached_store import MemcachedStore
from faasgd.store.push import Push, PushId
from faasgd.store.update_rule import SUM, UpdateRule


class MemcachedPoolStore(MemcachedStore):
    """ParameterStore over a memcached_pool.PoolClient (any pymemcache-like client that is a ServerRing)."""

    server_clock = "memcached stats time (1 s), first server of the pool"

    def _map(self, error: BaseException, detail: str = "") -> StoreError | None:
        if isinstance(error, ServerFailed):
            return super()._map(error.error, f"server {error.server}" + (f"; {detail}" if detail else ""))
        return super()._map(error, detail)

    def set_weights(self, job_id: str, flat, version: int = 0, writers: int = 0, rule: UpdateRule = SUM) -> None:
        """As ParameterStore.set_weights, once every server has answered (else nothing is written)."""
        self.ping()
        super().set_weights(job_id, flat, version, writers, rule)

    def _chunk_floats(self, job_id: str, length: int, rule: UpdateRule) -> int:
        limit = max(1, self.chunk_floats // rule.width)
        return spread_chunk_floats(job_id, length, limit, self.client.servers, self.client.server_of)

    def holdings(self, job_id: str) -> dict[str, int]:
        """How many of the job's weight chunks each server holds now (every server named, 0 for one holding none)."""
        meta = self._weights_meta(job_id)
        found = self._found(keys.weights_chunks(job_id, meta.chunks))
        if isinstance(found, StoreError):
            raise found
        held = dict.fromkeys(self.client.servers, 0)
        for name in found:
            held[self.client.server_of(name)] += 1
        return held

    # ---- lost state, named by server -----------------------------------------------------------------------
    def _fetch(self, job_id: str, out: np.ndarray | None, steps: bool):
        with self._naming_lost(job_id):
            return super()._fetch(job_id, out, steps)

    def push_update(self, job_id: str, delta: np.ndarray, out: np.ndarray | None = None, *,
                    push_id: PushId | None = None, record: dict | None = None) -> Push:
        with self._naming_lost(job_id):
            return super().push_update(job_id, delta, out, push_id=push_id, record=record)

    def recover_worker(self, job_id: str, worker_id: int) -> None:
        """As MemcachedStore's, then a check that every server still holds the job's chunks: a worker resuming
        on a server that restarted empty (its record, its copy gone) learns it before it trains."""
        with self._naming_lost(job_id):
            super().recover_worker(job_id, worker_id)
        emptied = self._emptied(job_id, probe=True)
        if emptied is not None:
            raise emptied

    @contextlib.contextmanager
    def _naming_lost(self, job_id: str):
        """A JobNotFound or StateLost inside becomes StateLost naming the servers that lost the job's keys
        (`_emptied`), or the error of a server that does not answer; else it passes as it is."""
        try:
            yield
        except (JobNotFound, StateLost) as error:
            named = self._emptied(job_id)
            if named is None:
                raise
            raise named from error

    def _emptied(self, job_id: str, probe: bool = False) -> StoreError | None:
        """StateLost naming the servers that no longer hold keys of the job they held, while other keys of the job
        are still there; None when none is missing or all are (the whole job is gone: expired, or never there); the
        StoreError of a server that does not answer. With the job's layout known here, every weight chunk is asked
        for; else (its meta is gone) the meta, the version and the first chunks, a chunk counted missing only below
        one that is there (the job may have fewer). `probe` (a worker's every call asks it): with the layout known,
        only the first chunk each server holds, enough to tell a server that restarted empty, not a whole model."""
        meta = self._meta.get(job_id)
        head = [] if meta is not None else [keys.weights_meta(job_id), keys.weights_version(job_id)]
        chunks = keys.weights_chunks(job_id, meta.chunks if meta is not None else
                                     len(self.client.servers) * CHUNKS_PER_SERVER)
        if probe and meta is not None:
            chunks = list({self.client.server_of(name): name for name in reversed(chunks)}.values())
        found = self._found(head + chunks)
        if isinstance(found, StoreError):
            return found
        last = len(chunks) if meta is not None else max((i for i, k in enumerate(chunks) if k in found), default=-1)
        missing = [k for k in head + chunks[:last] if k not in found]
        if not missing or not found:
            return None
        servers = ", ".join(sorted({self.client.server_of(k) for k in missing}))
        return StateLost(self.url, f"job {job_id!r}: {len(missing)} of its keys missing on server {servers} "
                                   f"(restarted empty, or evicted)")

    def _found(self, names: list[str]) -> dict | StoreError:
        """The values of `names` that are there (every server asked at once); the StoreError naming a server that
        fails."""
        try:
            with self._errors():
                return self.client.get_many(names)
        except StoreError as failure:
            return failure

    def _server_cpu_s(self) -> float | None:
        """Every server's `stats` rusage_user + rusage_system, summed (None when one has none)."""
        return server_cpu.total(server_cpu.memcached_cpu_s(stats) for stats in self.client.stats_of_each().values())

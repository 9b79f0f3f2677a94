"""memcached://host:port — parameters and records in Memcached (no authentication exists).

Weights: `w:meta` (JSON), `w:version` (decimal ASCII counter), `w:{i}` (float32 chunks, each below
the item limit). A fetch is one get_many of the version and all chunks.

push_update adds chunk by chunk with CAS: one `gets` of all chunks, then per chunk add the delta
in numpy and `cas` it back; a chunk whose cas fails (someone wrote it meanwhile) counts a conflict
and is re-read and retried under the retry policy's bounds; once every chunk is in, `incr` the
version, then add the push's conflicts to the job's counter (one more round trip, only then). Each chunk receives each delta exactly once, so no update is ever lost. But
memcached has no multi-key transaction: a concurrent get_weights may see some chunks with a push
applied and others without, and a version that lags the chunks by the pushes in flight (Downpour
SGD tolerates this staleness). A push interrupted half-way (crash, timeout during a cas) leaves
part of its delta applied; a timed-out cas is not retried because its outcome is unknown.
Memcached may evict items under memory pressure: a missing chunk raises StoreError.

Records: JSON bytes (`set`, `add` for set-if-absent, `get_many`); counters: `incr`, creating the
key with `add` of "0" when missing, then `touch` (incr keeps an item's expiry; store/expiry.py);
events: an incr'd count plus one key per event (a reader skips an index whose key is not written
yet or was evicted). Every write carries the job's expiry (store/expiry.py).
"""

from __future__ import annotations

import socket

import numpy as np
import pymemcache.client.base
from pymemcache.client.base import PooledClient
from pymemcache.exceptions import MemcacheError, MemcacheUnexpectedCloseError

from faasgd.errors import JobNotFound, StoreError, StoreTimeout, StoreUnavailable
from faasgd.store import codec, keys, meter, server_cpu
from faasgd.store import memcached_push as mpush
from faasgd.store.base import ParameterStore
from faasgd.store.push import SUPERSEDED, Push, PushId
from faasgd.store.url import StoreUrl


# pymemcache reads a reply RECV_SIZE bytes a call (4 KiB as shipped): a weight chunk of 318 KB took 78 recv calls and
# as many small bytes objects joined at the end. Read up to 256 KiB a call (a few calls a chunk): a push's CPU,
# back to back in one process, 1.37-1.56 -> 0.73-0.99 ms (5 alternating pairs). A module setting of pymemcache's,
# read at each call; a small reply still allocates only what arrived.
READ_BYTES = 256 * 1024
pymemcache.client.base.RECV_SIZE = max(pymemcache.client.base.RECV_SIZE, READ_BYTES)


def connect(url: StoreUrl, timeout_s: float) -> PooledClient:
    """A thread-safe pymemcache client pool for `url` (lazy; values are bytes: no serde).

    Pooled because a warm function replica serves concurrent invocations on several threads and
    a plain pymemcache Client is not thread-safe.
    """
    return PooledClient(
        (url.host, url.port),
        default_noreply=False,  # every write is confirmed
        connect_timeout=timeout_s,
        timeout=timeout_s,
        socket_module=meter.COUNTING_SOCKET_MODULE,  # bytes on its sockets, per thread (resource profiles)
    )


class MemcachedStore(ParameterStore):
    """ParameterStore over Memcached; `client` may be any pymemcache-compatible object with gets/cas."""

    def _map(self, error: BaseException, detail: str = "") -> StoreError | None:
        """The StoreError for a pymemcache or socket exception (this backend's one mapping table)."""
        text = f"{type(error).__name__}: {error}" + (f"; {detail}" if detail else "")
        if isinstance(error, (socket.timeout, TimeoutError)):  # before OSError: timeouts are OSErrors too
            return StoreTimeout(self.url, text)
        if isinstance(error, (MemcacheUnexpectedCloseError, OSError)):
            return StoreUnavailable(self.url, text)
        if isinstance(error, MemcacheError):
            return StoreError(self.url, text)
        return None

    def _ping(self) -> None:
        self.client.version()

    clock_resolution_s = 1.0  # `stats` time is truncated to the second: job_time uses the host's clock instead
    server_clock = "memcached stats time (1 s)"

    def _server_time(self) -> float:
        """`stats` time: whole seconds, so durations on Memcached are good to about a second."""
        stats = self.client.stats()
        value = stats.get(b"time", stats.get("time"))
        if value is None:
            raise StoreError(self.url, "memcached's stats carry no time")
        return float(int(value))

    def _write_weights(self, job_id: str, meta: bytes, chunks: list[bytes], version: int, ttl_s: int) -> None:
        values = dict(zip(keys.weights_chunks(job_id, len(chunks)), (mpush.join({}, c) for c in chunks)))
        values[keys.weights_meta(job_id)] = meta
        values[keys.weights_version(job_id)] = str(version).encode()
        refused = self.client.set_many(values, expire=ttl_s, noreply=False)
        if refused:
            raise StoreError(self.url, f"memcached refused {len(refused)} keys of job {job_id!r} "
                                       f"(item larger than its -I limit?)")

    def _get_many(self, names: list[str]) -> list[bytes | None]:
        found = self.client.get_many(names)
        return [found.get(k) for k in names]

    def _read_weights(self, job_id: str, meta: codec.WeightsMeta,
                      steps: bool = False) -> tuple[int, int | None, list[bytes | None]]:
        """(version, steps, chunks' float bytes) in one round trip; both derived from the writers' records
        (memcached_push.py), which every read fetches anyway."""
        writers = mpush.writer_keys(job_id, meta)
        with self._errors():
            raw = self._get_many([keys.weights_version(job_id), *writers, *keys.weights_chunks(job_id, meta.chunks)])
        version = mpush.version_of(self.push_port, raw[0], raw[1:1 + len(writers)])
        if version is None:
            self._meta.pop(job_id, None)
            raise JobNotFound(job_id)
        held = self._steps(raw[1:1 + len(writers)])
        port = self.push_port
        return version, held, [mpush.strip(port, job_id, r, i) for i, r in enumerate(raw[1 + len(writers):])]

    def _push(self, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId | None,
              record: dict | None, out: np.ndarray | None = None) -> tuple[Push, list | None]:
        """A push (module docstring); with a push id and `out`, an applied push's weights are added straight into
        `out` and its chunks returned as None (memcached_push.apply_chunks)."""
        if push_id is not None:
            version, steps, floats, outcome, conflicts, retries = mpush.push_with_id(
                self.push_port, job_id, meta, delta, push_id, record, out)
            return Push(version, conflicts, retries, applied=outcome != SUPERSEDED, steps=steps), floats
        chunk_keys = keys.weights_chunks(job_id, meta.chunks)
        found = self.client.gets_many(chunk_keys)
        current = {i: found.get(k, (None, None)) for i, k in enumerate(chunk_keys)}
        floats, conflicts, retries = mpush.apply_chunks(self.push_port, job_id, meta, delta, None, current)
        if self.client.incr(keys.weights_version(job_id), 1, noreply=False) is not None:  # gone: JobNotFound below
            self.client.touch(keys.weights_version(job_id), expire=self._expiry(job_id), noreply=False)
        version, steps, _ = self._read_weights(job_id, meta)  # base + the writers' pushes
        return Push(version, conflicts, retries, steps=steps), floats

    def _update_worker(self, key: str, data: bytes, allowed, ttl_s: int) -> bool:
        for _ in range(100):
            stored, token = self.client.gets(key)
            if not allowed(self._decode(codec.record_from_bytes, stored, "worker record")):
                return False
            done = self.client.add(key, data, expire=ttl_s, noreply=False) if stored is None else \
                self.client.cas(key, data, token, expire=ttl_s, noreply=False)
            if done:
                return True
        raise StoreError(self.url, f"{key}: could not write the worker record (it keeps changing)")

    def recover_worker(self, job_id: str, worker_id: int) -> None:
        with self._errors():
            mpush.roll_forward(self.push_port, job_id, worker_id)

    def _put(self, key: str, data: bytes, ttl_s: int) -> None:
        self.client.set(key, data, expire=ttl_s, noreply=False)

    def _add(self, key: str, data: bytes, ttl_s: int) -> bool:
        return bool(self.client.add(key, data, expire=ttl_s, noreply=False))

    def _delete(self, key: str) -> None:
        self.client.delete(key, noreply=False)

    def _touch(self, names: list[str], ttl_s: int) -> None:
        for name in names:  # memcached has no multi-key touch
            self.client.touch(name, expire=ttl_s, noreply=False)

    @property
    def push_port(self) -> mpush.PushPort:
        """The face memcached_push.py's exactly-once pushes work through (a new one a call: the current client)."""
        return mpush.PushPort(self.url, self.client, self._decode, self._int, self._steps, self._expiry,
                              self._after_read, self._added_into, self._until_won, self._incr, self._weights_meta,
                              self._get_many)

    def _incr(self, key: str, by: int, ttl_s: int) -> int:
        """incr keeps an item's expiry: created by `add` with it, then pushed on by `touch` (a lost race with
        another creator is fine)."""
        value = self.client.incr(key, by, noreply=False)
        if value is None:
            self.client.add(key, b"0", expire=ttl_s, noreply=False)
            value = self.client.incr(key, by, noreply=False)
        if value is None:
            raise StoreError(self.url, f"counter {key!r} vanished right after it was created")
        self.client.touch(key, expire=ttl_s, noreply=False)
        return int(value)

    def _append_event(self, job_id: str, data: bytes, ttl_s: int) -> None:
        index = self._incr(keys.events(job_id), 1, ttl_s) - 1
        self.client.set(keys.event(job_id, index), data, expire=ttl_s, noreply=False)

    def _events(self, job_id: str, start: int) -> list[bytes]:
        count = self._int(self.client.get(keys.events(job_id))) or 0
        names = [keys.event(job_id, i) for i in range(start, count)]
        if not names:
            return []
        found = self.client.get_many(names)
        return [found[k] for k in names if k in found]

    def _close(self) -> None:
        self.client.close()

    def _server_cpu_s(self) -> float | None:
        """`stats`: rusage_user + rusage_system."""
        return server_cpu.memcached_cpu_s(self.client.stats())

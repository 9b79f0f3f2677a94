"""memory://name — an in-process store for unit tests: a dict of bytes behind a lock.

Same semantics as the real backends, including expiries (every write's, store/expiry.py; checked
lazily on read) and optimistic push_update: read a snapshot under the lock, add outside it, write
back only if the version key was not written meanwhile (a write token per key, like memcached's
CAS), else count a conflict and redo it under the retry policy's bounds. The same `name` gives the
same data within one process.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Callable

import numpy as np

from faasgd.errors import JobNotFound
from faasgd.store import codec, keys
from faasgd.store.base import ParameterStore, writer_keys
from faasgd.store.push import APPLY, SUPERSEDED, LostRace, Push, PushId, decide, steps_of

_SPACES: dict[str, "MemorySpace"] = {}
_SPACES_LOCK = threading.Lock()


class MemorySpace:
    """One named keyspace: key -> (bytes, expiry or None, write token), plus lists for event logs."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # expiries are read against it (tests inject a fake one)
        self.lock = threading.RLock()
        self._values: dict[str, tuple[bytes, float | None, int]] = {}
        self._lists: dict[str, tuple[list[bytes], float | None]] = {}  # key -> (items, expiry or None)
        self._tokens = itertools.count(1)

    def get(self, key: str) -> bytes | None:
        return self.get_with_token(key)[0]

    def get_with_token(self, key: str) -> tuple[bytes | None, int]:
        with self.lock:
            entry = self._values.get(key)
            if entry is None:
                return None, 0
            value, expires, token = entry
            if expires is not None and expires <= self.clock():
                del self._values[key]
                return None, 0
            return value, token

    def set(self, key: str, value: bytes, ttl_s: int = 0) -> None:
        expires = self.clock() + ttl_s if ttl_s else None
        with self.lock:
            self._values[key] = (bytes(value), expires, next(self._tokens))

    def add(self, key: str, value: bytes, ttl_s: int = 0) -> bool:
        with self.lock:
            if self.get(key) is not None:
                return False
            self.set(key, value, ttl_s)
            return True

    def touch(self, key: str, ttl_s: int) -> None:
        """Make `key` (a value or a list) expire `ttl_s` from now, if it is there."""
        with self.lock:
            expires = self.clock() + ttl_s
            if self.get(key) is not None:
                value, _, token = self._values[key]
                self._values[key] = (value, expires, token)
            elif self._live_list(key) is not None:
                self._lists[key] = (self._lists[key][0], expires)

    def delete(self, key: str) -> None:
        with self.lock:
            self._values.pop(key, None)

    def incr(self, key: str, by: int, ttl_s: int = 0) -> int:
        with self.lock:
            value = int(self.get(key) or b"0") + by
            self.set(key, str(value).encode(), ttl_s)
            return value

    def rpush(self, key: str, value: bytes, ttl_s: int = 0) -> None:
        with self.lock:
            items = self._live_list(key) or []
            items.append(bytes(value))
            self._lists[key] = (items, self.clock() + ttl_s if ttl_s else None)

    def lrange(self, key: str, start: int) -> list[bytes]:
        with self.lock:
            return list((self._live_list(key) or [])[start:])

    def expiries(self, prefix: str) -> dict[str, float | None]:
        """Every live key starting with `prefix` (values and lists) -> seconds until it expires (None: never)."""
        with self.lock:
            now, found = self.clock(), {}
            for key in [k for k in self._values if k.startswith(prefix)]:
                if self.get(key) is not None:
                    found[key] = None if self._values[key][1] is None else self._values[key][1] - now
            for key in [k for k in self._lists if k.startswith(prefix)]:
                if self._live_list(key) is not None:
                    found[key] = None if self._lists[key][1] is None else self._lists[key][1] - now
            return found

    def _live_list(self, key: str) -> list[bytes] | None:
        items, expires = self._lists.get(key, (None, None))
        if expires is not None and expires <= self.clock():
            del self._lists[key]
            return None
        return items


def space(name: str) -> MemorySpace:
    """The process-wide keyspace called `name`, created on first use."""
    with _SPACES_LOCK:
        return _SPACES.setdefault(name, MemorySpace())


class MemoryStore(ParameterStore):
    """ParameterStore over a MemorySpace (thread-safe; unit tests only)."""

    def __init__(self, url: str, name: str, client: MemorySpace | None = None, **options):
        super().__init__(url, client if client is not None else space(name), **options)

    def _map(self, error: BaseException, detail: str = "") -> None:
        return None  # nothing here fails like a network: any exception is a bug

    def _ping(self) -> None:
        pass

    def _server_time(self) -> float:
        return time.time()  # the "server" is this process

    def _write_weights(self, job_id: str, meta: bytes, chunks: list[bytes], version: int, ttl_s: int) -> None:
        with self.client.lock:
            for key, chunk in zip(keys.weights_chunks(job_id, len(chunks)), chunks):
                self.client.set(key, chunk, ttl_s)
            self.client.set(keys.weights_meta(job_id), meta, ttl_s)
            self.client.set(keys.weights_version(job_id), str(version).encode(), ttl_s)

    def _get_many(self, names: list[str]) -> list[bytes | None]:
        with self.client.lock:
            return [self.client.get(k) for k in names]

    def _push(self, job_id: str, meta: codec.WeightsMeta, delta: np.ndarray, push_id: PushId | None,
              record: dict | None, out: np.ndarray | None = None) -> tuple[Push, list[bytes]]:
        """A push under the space's lock (module docstring); its chunks are decoded into `out` by push_update."""
        version_key = keys.weights_version(job_id)
        chunk_keys = keys.weights_chunks(job_id, meta.chunks)
        worker_key = keys.worker(job_id, push_id.worker) if push_id else None
        others = [k for k in writer_keys(job_id, meta) if k != worker_key]
        seen = {"conflicts": 0}
        ttl_s = self._expiry(job_id)

        def attempt() -> tuple[int, int, list[bytes], str]:
            with self.client.lock:
                version, token = self.client.get_with_token(version_key)
                raw = [self.client.get(k) for k in chunk_keys]
                stored = self.client.get(worker_key) if worker_key else None
                steps = self._steps([self.client.get(k) for k in others])
            if version is None:
                raise JobNotFound(job_id)
            own = self._decode(codec.record_from_bytes, stored, "worker record")
            if push_id is not None:
                outcome = decide(own, push_id, record)
                if outcome != APPLY:
                    return int(version), steps + steps_of([own]), raw, outcome
            self._after_read(job_id)
            new = [self._added(job_id, r, delta, meta, i) for i, r in enumerate(raw)]
            with self.client.lock:
                unchanged = self.client.get_with_token(version_key)[1] == token
                if not unchanged or (worker_key and self.client.get(worker_key) != stored):
                    seen["conflicts"] += 1
                    raise LostRace
                for key, chunk in zip(chunk_keys, new):
                    self.client.set(key, chunk, ttl_s)
                if worker_key:
                    self.client.set(worker_key, codec.record_to_bytes(record), ttl_s)
                if seen["conflicts"]:
                    self.client.incr(keys.counter(job_id, keys.CONFLICTS), seen["conflicts"], ttl_s)
                return self.client.incr(version_key, 1, ttl_s), steps + steps_of([record]), new, APPLY

        (version, steps, chunks, outcome), retries = self._until_won(attempt, job_id)
        return Push(version, seen["conflicts"], retries, applied=outcome != SUPERSEDED, steps=steps), chunks

    def _update_worker(self, key: str, data: bytes, allowed, ttl_s: int) -> bool:
        with self.client.lock:
            if not allowed(self._decode(codec.record_from_bytes, self.client.get(key), "worker record")):
                return False
            self.client.set(key, data, ttl_s)
            return True

    def _put(self, key: str, data: bytes, ttl_s: int) -> None:
        self.client.set(key, data, ttl_s)

    def _add(self, key: str, data: bytes, ttl_s: int) -> bool:
        return self.client.add(key, data, ttl_s)

    def _delete(self, key: str) -> None:
        self.client.delete(key)

    def _touch(self, names: list[str], ttl_s: int) -> None:
        for name in names:
            self.client.touch(name, ttl_s)

    def _incr(self, key: str, by: int, ttl_s: int) -> int:
        return self.client.incr(key, by, ttl_s)

    def _append_event(self, job_id: str, data: bytes, ttl_s: int) -> None:
        self.client.rpush(keys.events(job_id), data, ttl_s)

    def _events(self, job_id: str, start: int) -> list[bytes]:
        return self.client.lrange(keys.events(job_id), start)

    def _close(self) -> None:
        pass

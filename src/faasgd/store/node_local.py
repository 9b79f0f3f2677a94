"""Node-local topology: fetches read a cache on the worker's node; pushes go to the global store.

A background thread copies the global weights (and their version) into the node-local cache every
`refresh_s`. Every worker process on the node runs such a thread, but a lock record with a TTL of
`refresh_s` in the cache lets only one of them refresh per interval. Workers see parameters up to
about `refresh_s` old; the staleness they report at push (other workers' steps applied since the
parameters they stepped from) includes that. The cache's copy of a job expires like the job's keys in the
global store (its keep_s, store/expiry.py). When the cache is empty, unreachable or lost, a fetch falls back to
the global store (and seeds the cache).

The cache copy does not carry the minibatch steps its weights hold (`fetch` answers steps None), so
a worker counts a push's staleness from the last snapshot whose steps it knows: its own previous
push's, never newer than the copy it uses (reads are monotonic). With this topology the staleness in
steps is an upper bound.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable

import numpy as np

from faasgd.errors import JobNotFound, StoreError
from faasgd.store import keys, open_store
from faasgd.store.base import ParameterStore
from faasgd.store.push import Snapshot

IDLE_STOP_FACTOR = 20  # a refresher stops after this many intervals without a fetch


class NodeLocalStore:
    """A ParameterStore look-alike: get_weights from the local cache, everything else global."""

    def __init__(self, global_store: ParameterStore, local_url: str, refresh_s: float = 1.0,
                 clock: Callable[[], float] = time.time):
        self.global_store = global_store
        self.clock = clock  # wall clock: refresh intervals are shared by every process on the node
        self.local = open_store(local_url)
        # The refresher thread gets clients of its own: pymemcache clients are not thread-safe.
        self._refresh_global = global_store.reopen()
        self._refresh_local = open_store(local_url)
        self.refresh_s = refresh_s
        self.fallbacks = 0  # fetches served by the global store because the cache could not
        self._last_fetch: dict[str, float] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def __getattr__(self, name):  # records, counters, push_update, ping... are the global store's
        return getattr(self.global_store, name)

    @property
    def url(self) -> str:
        return self.global_store.url

    def server_cpu_s(self) -> float | None:
        """The global store's servers' CPU count; the node-local cache's own server is not in it."""
        return self.global_store.server_cpu_s()

    def authoritative(self) -> ParameterStore:
        """The global store: final evaluations read the real parameters, not the cached copy."""
        return self.global_store

    def get_weights(self, job_id: str, out: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """The cached parameters and the global version they are a copy of."""
        self._last_fetch[job_id] = time.monotonic()
        self.local.keep(job_id, self.global_store.keep_s_of(job_id))  # the copy expires like the job's keys
        self._ensure_refresher(job_id)
        try:
            return self.local.get_weights(job_id, out=out)
        except (JobNotFound, StoreError):
            self.fallbacks += 1
        weights, version = self.global_store.get_weights(job_id, out=out)
        try:
            self.local.set_weights(job_id, weights, version)
        except StoreError:
            pass  # the cache is down: keep serving from the global store
        return weights, version

    def fetch(self, job_id: str, out: np.ndarray | None = None) -> Snapshot:
        """get_weights as a Snapshot; steps None: a cache copy does not know them."""
        return Snapshot(self.get_weights(job_id, out=out)[1], None)

    def refresh(self, job_id: str) -> bool:
        """Copy the global weights into the cache unless another process did this interval."""
        bucket = int(self.clock() / self.refresh_s)  # one refresh per interval, whatever its length
        ttl = max(1, math.ceil(2 * self.refresh_s))  # the lock only has to outlive its interval
        self._refresh_local.keep(job_id, self._refresh_global.keep_s_of(job_id))
        if not self._refresh_local.add_record(job_id, keys.cache_refresh_name(bucket), {"at": self.clock()}, ttl_s=ttl):
            return False
        weights, version = self._refresh_global.get_weights(job_id)
        self._refresh_local.set_weights(job_id, weights, version)
        return True

    def _ensure_refresher(self, job_id: str) -> None:
        with self._lock:
            thread = self._threads.get(job_id)
            if thread is None or not thread.is_alive():
                thread = threading.Thread(target=self._refresh_loop, args=(job_id,), daemon=True,
                                          name=f"faasgd-cache-refresh-{job_id}")
                self._threads[job_id] = thread
                thread.start()

    def _refresh_loop(self, job_id: str) -> None:
        while not self._closed.wait(self.refresh_s):
            if time.monotonic() - self._last_fetch.get(job_id, 0.0) > IDLE_STOP_FACTOR * self.refresh_s:
                return
            try:
                self.refresh(job_id)
            except (StoreError, JobNotFound):
                continue  # retried next interval; fetches fall back meanwhile

    def close(self) -> None:
        """Stop the refreshers and close the cache clients (the global store stays open: not ours)."""
        self._closed.set()
        for thread in list(self._threads.values()):
            thread.join(timeout=2 * self.refresh_s + 1)
        for store in (self.local, self._refresh_global, self._refresh_local):
            store.close()

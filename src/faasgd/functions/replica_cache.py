"""What a process that runs workers keeps between invocations (module-level, for the process's life).

In a warm function replica: store clients, node-local views, gateway clients and loaded shards
survive from one invocation to the next (OpenFaaS keeps the process; OPENFAAS.md 1.5). A worker
process of `faasgd train --direct` uses the same cache. When a worker ends in a process that loaded
TensorFlow, the process is asked to renew itself (functions/replica_renewal.py: a fresh interpreter in place,
so no later job finds TensorFlow in the replica's memory); a renewed process's first call is not a cold start.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from typing import Iterator

from faasgd import data
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError
from faasgd.functions import replica_renewal
from faasgd.openfaas import GatewayClient
from faasgd.store import ParameterStore, open_store
from faasgd.store.node_local import NodeLocalStore

_stores: dict[str, ParameterStore] = {}
_node_local: dict[tuple, NodeLocalStore] = {}
_gateways: dict[str, GatewayClient] = {}
_lock = threading.Lock()
# training calls in this process now; calls it has served (a renewed process is not cold: the platform started it)
_calls = {"running": 0, "served": 1 if replica_renewal.renewals(os.environ) else 0}


def first_call() -> bool:
    """Whether this is the first call this process serves (a cold start, as FaaS platforms count one)."""
    with _lock:
        _calls["served"] += 1
        return _calls["served"] == 1


def store_for(url: str) -> ParameterStore:
    """One client per store URL (the URLs are the process's own configuration: a bounded set).
    memory:// is an in-process store for tests: served only when a test put one there (keep_store)."""
    with _lock:
        if url not in _stores:
            if url.startswith("memory:"):
                raise ConfigError("store_url", "memory:// is an in-process store for tests; no function opens one")
            _stores[url] = open_store(url)
        return _stores[url]


def keep_store(url: str, store: ParameterStore) -> None:
    """Serve `url` with this store object from now on (a handler test puts an in-process store there)."""
    with _lock:
        _stores[url] = store


def training_store(config: TrainConfig, store: ParameterStore) -> ParameterStore | NodeLocalStore:
    """The store a worker trains against: the global one, or node-local fetches in front of it."""
    if config.store_topology != "node-local":
        return store
    key = (store.url, config.local_store_url, config.local_refresh_s)
    with _lock:
        if key not in _node_local:  # one view (and refresher thread) per topology
            _node_local[key] = NodeLocalStore(store, config.local_store_url, config.local_refresh_s)
        return _node_local[key]


def gateway_for(url: str) -> GatewayClient:
    """One gateway client (and its connection pool) per gateway URL."""
    with _lock:
        if url not in _gateways:
            _gateways[url] = GatewayClient(url)
        return _gateways[url]


@functools.lru_cache(maxsize=6)  # a few workers' shards, the validation and test rows
def load_shard(dataset: str, split: str, worker_id: int, number_of_workers: int, limit: int,
               scaled: bool = True, holdout: int = 0, after: int = 0) -> data.Shard:
    """data.load_shard, kept for the next invocation (per-iteration mode reuses the same shard)."""
    return data.load_shard(dataset, split, worker_id, number_of_workers, limit, scaled=scaled, holdout=holdout,
                           after=after)


@contextlib.contextmanager
def training_call() -> Iterator[dict]:
    """Around one training call: when it ends its worker (`ended["worker"] = True`) and no other call runs,
    the loaded shards are let go, so an idle replica holds no job's data; when it ends its worker in a process
    that loaded TensorFlow, the process is asked to renew itself (once no call runs)."""
    ended = {"worker": False}
    with _lock:
        _calls["running"] += 1
    try:
        yield ended
    finally:
        with _lock:
            _calls["running"] -= 1
            idle = _calls["running"] == 0
        if ended["worker"] and idle:
            load_shard.cache_clear()
        if ended["worker"] and replica_renewal.tensorflow_loaded():
            replica_renewal.ask("a worker that loaded TensorFlow ended here")


def forget() -> None:
    """Drop every kept client and shard (tests; a replica never needs it)."""
    with _lock:
        for view in _node_local.values():
            view.close()
        for client in [*_stores.values(), *_gateways.values()]:
            client.close()
        _node_local.clear()
        _stores.clear()
        _gateways.clear()
    load_shard.cache_clear()

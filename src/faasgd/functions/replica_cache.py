"""What a warm replica keeps between invocations: store clients and loaded shards (module-level)."""

from __future__ import annotations

import functools
import threading

from faasgd import data
from faasgd.store import ParameterStore, open_store
from faasgd.store.node_local import NodeLocalStore

_stores: dict[str, ParameterStore] = {}
_node_local: dict[tuple, NodeLocalStore] = {}
_lock = threading.Lock()


def store_for(url: str) -> ParameterStore:
    """One client per store URL for the life of the replica."""
    with _lock:
        if url not in _stores:
            _stores[url] = open_store(url)
        return _stores[url]


def node_local_for(global_store: ParameterStore, global_url: str, local_url: str, refresh_s: float) -> NodeLocalStore:
    """One node-local view (with its refresher thread) per topology for the life of the replica."""
    key = (global_url, local_url, refresh_s)
    with _lock:
        if key not in _node_local:
            _node_local[key] = NodeLocalStore(global_store, global_url, local_url, refresh_s)
        return _node_local[key]


@functools.lru_cache(maxsize=4)
def load_shard(dataset: str, split: str, worker_id: int, number_of_workers: int, limit: int,
               scaled: bool = True) -> data.Shard:
    """data.load_shard, kept for the next invocation (per-iteration mode reuses the same shard)."""
    return data.load_shard(dataset, split, worker_id, number_of_workers, limit, scaled=scaled)


def forget() -> None:
    """Drop every kept client and shard (tests; a replica never needs it)."""
    with _lock:
        for view in _node_local.values():
            view.close()
        _node_local.clear()
        for store in _stores.values():
            store.close()
        _stores.clear()
    load_shard.cache_clear()

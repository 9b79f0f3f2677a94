"""Node-local topology: fetches from a cache refreshed from the global store; pushes go global."""

import uuid

import numpy as np

from faasgd.store import open_store
from faasgd.store.node_local import NodeLocalStore


def urls():
    tag = uuid.uuid4().hex[:8]
    return f"memory://global{tag}", f"memory://local{tag}"


def test_fetch_falls_back_to_global_then_serves_the_cached_copy_until_refreshed():
    global_url, local_url = urls()
    global_store = open_store(global_url)
    global_store.set_weights("j1", np.arange(5, dtype=np.float32))
    view = NodeLocalStore(global_store, local_url, refresh_s=3600)
    try:
        weights, version = view.get_weights("j1")
        assert version == 0 and view.fallbacks == 1
        assert open_store(local_url).get_weights("j1")[1] == 0  # the cache was seeded
        assert view.push_update("j1", np.ones(5, np.float32)).version == 1  # pushes are global
        stale, stale_version = view.get_weights("j1")
        np.testing.assert_array_equal(stale, np.arange(5))
        assert stale_version == 0 and view.fallbacks == 1
        assert view.refresh("j1") is True
        fresh, fresh_version = view.get_weights("j1")
        np.testing.assert_array_equal(fresh, np.arange(5) + 1)
        assert fresh_version == 1
    finally:
        view.close()


def test_one_refresh_per_interval_per_node():
    global_url, local_url = urls()
    global_store = open_store(global_url)
    global_store.set_weights("j2", np.zeros(3, np.float32))
    now = [1000.0]
    first = NodeLocalStore(global_store, local_url, refresh_s=30, clock=lambda: now[0])
    second = NodeLocalStore(global_store, local_url, refresh_s=30, clock=lambda: now[0])
    try:
        assert first.refresh("j2") is True
        assert second.refresh("j2") is False  # the other process on this node did it this interval
        now[0] += 30
        assert second.refresh("j2") is True  # next interval: whoever comes first
    finally:
        first.close()
        second.close()

"""Node-local topology on real servers: the background refresher keeps a memcached cache close to Redis."""

import time
import uuid

import numpy as np
import pytest

from faasgd.store import open_store
from faasgd.store.node_local import NodeLocalStore

pytestmark = pytest.mark.integration


def test_background_refresher_keeps_the_cache_close_to_global(redis_server, memcached_server):
    job = "n" + uuid.uuid4().hex[:10]
    global_store = open_store(redis_server.url)
    global_store.set_weights(job, np.zeros(4, np.float32))
    view = NodeLocalStore(global_store, memcached_server.url, refresh_s=0.2)
    try:
        assert view.get_weights(job)[1] == 0 and view.fallbacks == 1  # seeded from the global store
        global_store.push_update(job, np.full(4, 2.0, np.float32))
        assert view.get_weights(job)[1] == 0  # the cache lags ...
        deadline = time.monotonic() + 10
        while view.get_weights(job)[1] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        weights, version = view.get_weights(job)  # ... until the refresher copies the new version
        assert version == 1
        np.testing.assert_array_equal(weights, np.full(4, 2.0))
        assert view.fallbacks == 1
    finally:
        view.close()

"""The store servers' own CPU count: each backend's reading, None where the server does not say, errors as the store's
(real servers: tests/integration/test_store_cpu_real.py)."""

from __future__ import annotations

import fakeredis
import pytest
from pymemcache.test.utils import MockMemcacheClient

from faasgd.errors import StoreUnavailable
from faasgd.store import open_store
from faasgd.store.node_local import NodeLocalStore
from faasgd.store.redis_lib import redis
from faasgd.store.server_cpu import memcached_cpu_s, redis_cpu_s, total


class InfoClient(fakeredis.FakeRedis):
    """A Redis client whose INFO cpu answers `answer` (a dict), or raises it (an exception)."""

    def __init__(self, answer, **kwargs):
        super().__init__(**kwargs)
        self.answer, self.sections = answer, []

    def info(self, section=None, *args, **kwargs):
        self.sections.append(section)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def test_redis_counts_user_and_system_cpu_of_info_cpu():
    client = InfoClient({"used_cpu_sys": 0.25, "used_cpu_user": 1.5, "used_cpu_sys_children": 9.0})
    store = open_store("redis://127.0.0.1:1/0", client=client)
    assert store.server_cpu_s() == pytest.approx(1.75) and client.sections == ["cpu"]


@pytest.mark.parametrize("answer", [{"used_cpu_user": 1.0}, redis.ResponseError("unknown command 'INFO'"),
                                    redis.exceptions.NoPermissionError("this user has no permissions to run 'info'")])
def test_a_redis_that_does_not_say_gives_none(answer):
    assert open_store("redis://127.0.0.1:1/0", client=InfoClient(answer)).server_cpu_s() is None


def test_a_redis_that_does_not_answer_raises_the_stores_error():
    store = open_store("redis://127.0.0.1:1/0", client=InfoClient(redis.ConnectionError("refused")))
    with pytest.raises(StoreUnavailable):
        store.server_cpu_s()


def test_memcached_counts_its_rusage_and_the_memory_store_none():
    assert open_store("memcached://127.0.0.1:1", client=MockMemcacheClient()).server_cpu_s() == 2.0  # 1.0 + 1.0
    assert open_store("memory://server-cpu").server_cpu_s() is None  # its server is the caller's own process


def test_readings_of_either_keys_and_their_sums():
    assert memcached_cpu_s({b"rusage_user": 0.5, b"rusage_system": b"0.25"}) == pytest.approx(0.75)
    assert memcached_cpu_s({"rusage_user": "1.5", "rusage_system": 0.5}) == pytest.approx(2.0)
    assert memcached_cpu_s({b"rusage_user": 0.5}) is None and redis_cpu_s({}) is None
    assert redis_cpu_s({"used_cpu_user": "n/a", "used_cpu_sys": 1}) is None
    assert total([1.0, 2.5]) == pytest.approx(3.5) and total([1.0, None]) is None and total([]) is None


def test_a_node_local_cache_answers_with_its_global_stores_count():
    global_store = open_store("redis://127.0.0.1:1/0", client=InfoClient({"used_cpu_user": 3, "used_cpu_sys": 1}))
    cache = NodeLocalStore(global_store, "memory://server-cpu-cache")
    try:
        assert cache.server_cpu_s() == pytest.approx(4.0)
    finally:
        cache.close()

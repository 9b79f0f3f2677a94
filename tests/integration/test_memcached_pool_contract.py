"""The store contract over a pool of three real memcached servers (memcached://H:P1,H:P2,H:P3): every check one
memcached passes, with the job's chunks spread over the three."""

from __future__ import annotations

import pytest

from support import store_contract as contract
from faasgd.store import open_store
from faasgd.store.memcached_pool_store import MemcachedPoolStore

pytestmark = pytest.mark.integration


def open_pool(pool, **options):
    store = open_store(pool.url, chunk_floats=contract.CHUNK, timeout_s=2.0, **options)
    assert isinstance(store, MemcachedPoolStore)
    return store


@pytest.mark.parametrize("check", contract.SINGLE_CLIENT_CHECKS, ids=lambda c: c.__name__[6:])
def test_contract(memcached_pool, check):
    with open_pool(memcached_pool) as store:
        check(store)


@pytest.mark.parametrize("check", contract.TWO_CLIENT_CHECKS, ids=lambda c: c.__name__[6:])
def test_contract_two_clients(memcached_pool, check):
    with open_pool(memcached_pool) as store, open_pool(memcached_pool) as other:
        check(store, other)


@pytest.mark.parametrize("check", contract.MEMCACHED_CHECKS, ids=lambda c: c.__name__[6:])
def test_contract_memcached_only(memcached_pool, check):
    with open_pool(memcached_pool) as store:
        check(store)

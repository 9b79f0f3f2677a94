"""Parameter stores chosen by URL: redis://, redis-cluster://H1:P1,H2:P2,... (a Redis Cluster), memcached:// (one
server, or a pool: H1:P1,H2:P2,...), memory:// (tests only).

    store = open_store("redis://:secret@127.0.0.1:6379/0")
    store.set_weights(job_id, flat)
    weights, version = store.get_weights(job_id, out=buffer)
    snapshot = store.fetch(job_id, out=buffer)  # the same read, with the steps it holds: Snapshot(version, steps)
    store.push_update(job_id, delta)          # atomic add (no update is ever lost) -> Push(version, conflicts, retries)
    store.set_weights(job_id, flat, rule=UpdateRule("average", workers=4))  # pushes added by a rule (update_rule.py)

open_store does not connect; `store.ping()` checks the store answers.
"""

from __future__ import annotations

import os

from faasgd.store.base import ParameterStore
from faasgd.store.push import Push, PushId, Snapshot
from faasgd.store.codec import DEFAULT_CHUNK_FLOATS
from faasgd.store.update_rule import RULES, UpdateRule
from faasgd.store.url import StoreUrl, mask_password, parse_store_url

__all__ = ["open_store", "ParameterStore", "Push", "PushId", "Snapshot", "StoreUrl", "parse_store_url",
           "mask_password", "DEFAULT_CHUNK_FLOATS", "RULES", "UpdateRule"]

SECRETS_DIR = "/var/openfaas/secrets"  # where OpenFaaS mounts function secrets (the S3 channel reads its keys here too)
PASSWORD_SECRET = "store-password"  # file name of the Redis password inside the secrets dir


def open_store(
    url: str,
    *,
    client=None,
    timeout_s: float = 5.0,
    secrets_dir: str | None = None,
    chunk_floats: int = DEFAULT_CHUNK_FLOATS,
    max_retries: int = 200,
    retry_deadline_s: float = 30.0,
) -> ParameterStore:
    """The ParameterStore for `url` (lazy: nothing is contacted until the first call).

    client: an injected client for tests (fakeredis.FakeRedis(), a pymemcache mock, a MemorySpace).
    secrets_dir: where `store-password` is looked up when a Redis URL carries no password
    (default: env FAASGD_SECRETS_DIR, else /var/openfaas/secrets).
    chunk_floats, max_retries, retry_deadline_s: see ParameterStore.
    """
    parsed = parse_store_url(url)
    options = dict(chunk_floats=chunk_floats, max_retries=max_retries, retry_deadline_s=retry_deadline_s)
    reopen = None if client is not None else \
        (lambda: open_store(url, timeout_s=timeout_s, secrets_dir=secrets_dir, **options))
    store = _open(parsed, client, timeout_s, secrets_dir, options)
    store._reopen = reopen  # the location stays inside the object: no URL with a password ever leaves it
    return store


def _open(parsed: StoreUrl, client, timeout_s: float, secrets_dir: str | None, options: dict) -> ParameterStore:
    if parsed.scheme == "redis-cluster":
        from faasgd.store import redis_cluster_store

        if client is None:
            client = redis_cluster_store.connect(parsed, parsed.password or read_password(secrets_dir), timeout_s)
        return redis_cluster_store.RedisClusterStore(parsed.masked, client, **options)
    if parsed.scheme == "memcached" and len(parsed.nodes) > 1:
        from faasgd.store import memcached_pool, memcached_pool_store

        client = client if client is not None else memcached_pool.connect_pool(parsed, timeout_s)
        return memcached_pool_store.MemcachedPoolStore(parsed.masked, client, **options)
    if parsed.scheme == "redis":
        from faasgd.store import redis_store

        if client is None:
            password = parsed.password or read_password(secrets_dir)
            client = redis_store.connect(parsed, password, timeout_s)
        return redis_store.RedisStore(parsed.masked, client, **options)
    if parsed.scheme == "memcached":
        from faasgd.store import memcached_store

        if client is None:
            client = memcached_store.connect(parsed, timeout_s)
        return memcached_store.MemcachedStore(parsed.masked, client, **options)
    from faasgd.store import memory_store

    return memory_store.MemoryStore(parsed.masked, parsed.host, client, **options)


def read_password(secrets_dir: str | None = None) -> str | None:
    """The store password from <secrets_dir>/store-password, or None when that file does not exist."""
    directory = secrets_dir or os.environ.get("FAASGD_SECRETS_DIR") or SECRETS_DIR
    path = os.path.join(directory, PASSWORD_SECRET)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    except FileNotFoundError:
        return None

"""The store contract over in-process backends (memory://, fakeredis, pymemcache's mock) and URL parsing."""

from __future__ import annotations

import itertools
import time
import uuid

import fakeredis
import numpy as np
import pytest
from pymemcache.test.utils import MockMemcacheClient

from support import store_contract as contract
from faasgd.errors import ConfigError, StateLost, StoreError, StoreTimeout
from faasgd.store import PushId, keys, mask_password, open_store, parse_store_url
from support.fake_clock import StepClock


class CasMockMemcacheClient(MockMemcacheClient):
    """pymemcache's shipped MockMemcacheClient plus the minimum our store needs from real memcached:
    `gets`/`gets_many`/`cas` with a token per key that changes on every write, and an `incr` that
    accepts the decimal-ASCII bytes memcached stores (the shipped one adds an int to bytes)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tokens: dict[bytes, int] = {}
        self._next_token = itertools.count(1)

    def set(self, key, value, expire=0, noreply=True, flags=None):
        self._tokens[self.check_key(key)] = next(self._next_token)  # add/incr/cas all write via set
        return super().set(key, value, expire, noreply, flags=flags)

    def gets(self, key, default=None, cas_default=None):
        value = self.get(key)
        if value is None:
            return default, cas_default
        return value, str(self._tokens[self.check_key(key)]).encode()

    def gets_many(self, keys):
        return {k: self.gets(k) for k in keys if self.get(k) is not None}

    def cas(self, key, value, cas, expire=0, noreply=False, flags=None):
        if self.get(key) is None:
            return None
        if str(self._tokens[self.check_key(key)]).encode() != str(int(cas)).encode():
            return False
        self.set(key, value, expire, noreply, flags=flags)
        return True

    def stats(self, *args):
        return {**super().stats(*args), b"time": int(time.time())}  # memcached's clock: whole seconds

    def incr(self, key, value, noreply=False):
        current = self.get(key)
        if current is None:
            return None
        total = int(current) + value
        self.set(key, str(total).encode(), noreply=noreply)
        return total


def open_pair(kind: str):
    """Two store objects (separate client objects where the fake allows) over the same data."""
    options = dict(chunk_floats=contract.CHUNK)
    if kind == "memory":
        url = f"memory://unit-{uuid.uuid4().hex[:8]}"
        return open_store(url, **options), open_store(url, **options)
    if kind == "redis":
        server = fakeredis.FakeServer()
        return tuple(open_store("redis://127.0.0.1:6379/0", client=fakeredis.FakeRedis(server=server), **options)
                     for _ in range(2))
    mock = CasMockMemcacheClient()  # the mock's data lives in the client object, so the two share it
    return tuple(open_store("memcached://127.0.0.1:11211", client=mock, **options) for _ in range(2))


BACKENDS = ["memory", "redis", "memcached"]


TIMELESS_CHECKS = [c for c in contract.SINGLE_CLIENT_CHECKS if c is not contract.check_record_ttl]


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("check", TIMELESS_CHECKS, ids=lambda c: c.__name__[6:])
def test_contract(kind, check):
    store, _ = open_pair(kind)
    check(store)


def test_contract_record_ttl_on_a_fake_clock():
    """Expiry on memory:// with its clock injected; the fakes of redis and memcached keep real time,
    so their TTLs are checked against the real servers in tests/integration."""
    store, _ = open_pair("memory")
    clock = StepClock()
    store.client.clock = clock
    contract.check_record_ttl(store, advance=clock.sleep)


@pytest.mark.parametrize("check", contract.MEMCACHED_CHECKS, ids=lambda c: c.__name__[6:])
def test_contract_memcached_only(check):
    check(open_pair("memcached")[0])


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("check", contract.TWO_CLIENT_CHECKS, ids=lambda c: c.__name__[6:])
def test_contract_two_clients(kind, check):
    check(*open_pair(kind))


def test_memory_same_name_same_data():
    name = f"memory://shared-{uuid.uuid4().hex[:8]}"
    open_store(name).put_record("j", "config", {"a": 1})
    assert open_store(name).get_record("j", "config") == {"a": 1}
    assert open_store(name + "x").get_record("j", "config") is None


# ---- URLs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("url, expected", [
    ("redis://127.0.0.1:6380/2", ("redis", "127.0.0.1", 6380, 2, None, None)),
    ("redis://redis.openfaas:6379", ("redis", "redis.openfaas", 6379, 0, None, None)),
    ("redis://localhost", ("redis", "localhost", 6379, 0, None, None)),
    ("redis://localhost/", ("redis", "localhost", 6379, 0, None, None)),
    ("redis://:s%40cret@h:1/0", ("redis", "h", 1, 0, None, "s@cret")),
    ("redis://alice:pw@h:7000/15", ("redis", "h", 7000, 15, "alice", "pw")),
    ("memcached://10.0.0.5:11212", ("memcached", "10.0.0.5", 11212, 0, None, None)),
    ("memcached://cache", ("memcached", "cache", 11211, 0, None, None)),
    ("memory://Unit_tests-1", ("memory", "Unit_tests-1", 0, 0, None, None)),
])
def test_parse_good_urls(url, expected):
    u = parse_store_url(url)
    assert (u.scheme, u.host, u.port, u.db, u.username, u.password) == expected


@pytest.mark.parametrize("url, nodes", [
    ("redis-cluster://:pw@a:7000,b:7001,c", (("a", 7000), ("b", 7001), ("c", 6379))),
    ("redis-cluster://a:7000/0", (("a", 7000),)),
    ("memcached://a:1,b:2", (("a", 1), ("b", 2))),
    ("memcached://a", (("a", 11211),)),
    ("redis://h:1/0", (("h", 1),)),
])
def test_every_server_of_a_url_is_kept_in_order(url, nodes):
    u = parse_store_url(url)
    assert u.nodes == nodes and (u.host, u.port) == nodes[0]


@pytest.mark.parametrize("url, words", [
    ("redis://a:1,b:2/0", ["names one server", "redis-cluster://"]),
    ("redis-cluster://a:1,b:2/3", ["database 0 only"]),
    ("memcached://a:1,,b:2", ["missing host"]),
    ("memcached://a:1,a:1", ["named twice"]),
    ("memcached://a:1,b:99999", ["port", "'99999'"]),
    ("redis-cluster://:secret@a:1,b:x", ["port", "***"]),
    ("memcached://" + ",".join(f"h{i}:1" for i in range(65)), ["at most 64"]),
])
def test_bad_server_lists_name_store_url(url, words):
    with pytest.raises(ConfigError) as e:
        parse_store_url(url)
    assert e.value.field == "store_url" and "secret" not in str(e.value)
    for word in words:
        assert word in str(e.value), (word, str(e.value))


def test_password_is_masked_everywhere():
    assert mask_password("redis://:hunter2@h:6379/0") == "redis://:***@h:6379/0"
    assert mask_password("redis://bob:hunter2@h/0") == "redis://bob:***@h/0"
    assert mask_password("redis://h:6379/0") == "redis://h:6379/0"
    store = open_store("redis://:hunter2@h:6379/0", client=fakeredis.FakeRedis())
    assert store.url == "redis://:***@h:6379/0" and "hunter2" not in repr(store)
    with pytest.raises(ConfigError) as e:
        parse_store_url("redis://:hunter2@h:notaport/0")
    assert "hunter2" not in str(e.value) and "***" in str(e.value)


@pytest.mark.parametrize("url, words", [
    ("", ["expected a URL"]),
    (None, ["expected a URL"]),
    ("127.0.0.1:6379", ["missing scheme"]),
    ("x://h:1", ["unknown scheme 'x'", "allowed: redis, redis-cluster, memcached, memory", "'x://h:1'"]),
    ("http://h:1", ["unknown scheme 'http'"]),
    ("redis://", ["missing host"]),
    ("redis://:6379/0", ["missing host"]),
    ("redis://h:notaport/0", ["port", "'notaport'"]),
    ("redis://h:0/0", ["port", "'0'"]),
    ("redis://h:70000/0", ["port", "'70000'"]),
    ("redis://h:6379/db1", ["database", "'db1'"]),
    ("redis://h:6379/-1", ["database"]),
    ("redis://h:6379/0/extra", ["database"]),
    ("redis://h:6379/0?timeout=3", ["query"]),
    ("memcached://:pw@h:11211", ["no authentication", "***"]),
    ("memcached://user@h:11211", ["no authentication"]),
    ("memcached://h:11211/0", ["no path"]),
    ("memcached://h:port", ["port"]),
    ("memory://", ["memory:// needs a name"]),
    ("memory://bad name", ["memory:// needs a name"]),
])
def test_malformed_urls_name_store_url(url, words):
    with pytest.raises(ConfigError) as e:
        open_store(url)
    assert e.value.field == "store_url"
    for word in words:
        assert word in str(e.value), (word, str(e.value))


def _password_of(store) -> str | None:
    return store.client.connection_pool.connection_kwargs.get("password")


def test_redis_password_from_secret_file(tmp_path, monkeypatch):
    (tmp_path / "store-password").write_text("from-file\n")
    assert _password_of(open_store("redis://h:6379/0", secrets_dir=str(tmp_path))) == "from-file"
    assert _password_of(open_store("redis://:from-url@h/0", secrets_dir=str(tmp_path))) == "from-url"
    monkeypatch.setenv("FAASGD_SECRETS_DIR", str(tmp_path))
    assert _password_of(open_store("redis://h:6379/0")) == "from-file"
    monkeypatch.setenv("FAASGD_SECRETS_DIR", str(tmp_path / "missing"))
    assert _password_of(open_store("redis://h:6379/0")) is None


def test_open_store_does_not_connect():
    open_store("redis://127.0.0.1:1/0")  # nothing listens on port 1; no error until used
    open_store("memcached://127.0.0.1:1")


def test_chunk_floats_validated():
    with pytest.raises(ConfigError) as e:
        open_store("memory://x", chunk_floats=0)
    assert e.value.field == "chunk_floats"


# ---- Memcached: a push cut off half-way is finished exactly once ------------------------------
def half_applied_push(cut_at):
    """A 3-chunk job with one push cut off at its `cut_at`-th cas; (store, job, delta)."""
    mock = CasMockMemcacheClient()
    store = open_store("memcached://127.0.0.1:11211", client=mock, chunk_floats=contract.CHUNK)
    job, length = contract.new_job(), 2 * contract.CHUNK + 7
    store.set_weights(job, np.zeros(length, np.float32), writers=1)
    store.push_update(job, np.ones(length, np.float32), push_id=PushId(0, 1), record=contract.record(1, "a"))
    delta = np.arange(length, dtype=np.float32)
    store.client = contract.CutOff(mock, cut_at)
    with pytest.raises(StoreTimeout):
        store.push_update(job, delta, push_id=PushId(0, 2), record=contract.record(2, "a"))
    store.client = mock
    return store, job, delta


@pytest.mark.parametrize("cut_at", [1, 2, 3, 4])  # chunk 1, 2 or 3 of 3, or the record's commit
def test_a_memcached_push_resent_after_a_timeout_is_applied_once(cut_at):
    store, job, delta = half_applied_push(cut_at)
    again = store.push_update(job, delta, push_id=PushId(0, 2), record=contract.record(2, "a"))
    assert again.applied and again.version == 3 - 1
    weights, version = store.get_weights(job)
    np.testing.assert_array_equal(weights, 1 + delta)  # every chunk got the delta once
    assert version == 2 == store.worker_record(job, 0)["pushes"]


@pytest.mark.parametrize("cut_at", [1, 2, 3, 4])
def test_a_half_applied_memcached_push_is_rolled_forward_from_its_copy(cut_at):
    store, job, delta = half_applied_push(cut_at)  # the worker died: a new invocation recovers first
    store.recover_worker(job, 0)
    weights, version = store.get_weights(job)
    np.testing.assert_array_equal(weights, 1 + delta)
    assert version == 2 and store.worker_record(job, 0) == contract.record(2, "a")
    store.recover_worker(job, 0)  # twice is harmless
    np.testing.assert_array_equal(store.get_weights(job)[0], 1 + delta)


def test_a_lost_push_copy_is_reported_as_lost_state_not_rebuilt():
    store, job, _ = half_applied_push(2)
    store.client.delete(keys.pending_chunks(job, 0, 3)[1])  # evicted
    with pytest.raises(StoreError) as error:
        store.recover_worker(job, 0)
    assert isinstance(error.value, StateLost) and "half-applied push 2" in str(error.value)


# ---- Memcached: a push of one chunk needs no copy of its delta ----------------------------------
def one_chunk_push_cut_at_its_cas():
    """A 1-chunk job whose second push times out at the chunk's cas; (store, job, delta, mock)."""
    mock = CasMockMemcacheClient()
    store = open_store("memcached://127.0.0.1:11211", client=mock, chunk_floats=contract.CHUNK)
    job, length = contract.new_job(), contract.CHUNK - 3
    store.set_weights(job, np.zeros(length, np.float32), writers=1)
    store.push_update(job, np.ones(length, np.float32), push_id=PushId(0, 1), record=contract.record(1, "a"))
    delta = np.arange(length, dtype=np.float32)
    store.client = contract.CutOff(mock, 1)
    with pytest.raises(StoreTimeout):
        store.push_update(job, delta, push_id=PushId(0, 2), record=contract.record(2, "a"))
    store.client = mock
    return store, job, delta, mock


def test_a_one_chunk_memcached_push_writes_its_record_but_no_copy_of_its_delta():
    store, job, delta, mock = one_chunk_push_cut_at_its_cas()
    assert mock.get(keys.pending_chunks(job, 0, 1)[0]) is None  # the delta's bytes went to the chunk alone
    assert mock.get(keys.pending(job, 0)) is not None  # the record did, for a roll-forward to commit


def test_a_one_chunk_memcached_push_cut_before_its_chunk_is_dropped_by_the_roll_forward():
    store, job, _, _ = one_chunk_push_cut_at_its_cas()  # the cas never reached the chunk
    store.recover_worker(job, 0)
    weights, version = store.get_weights(job)
    np.testing.assert_array_equal(weights, np.ones_like(weights))  # push 2 never happened ...
    assert version == 1 and store.worker_record(job, 0) == contract.record(1, "a")  # ... and the record agrees


def test_a_one_chunk_memcached_push_whose_chunk_holds_it_is_committed_by_the_roll_forward():
    store, job, delta, mock = one_chunk_push_cut_at_its_cas()
    store.client = contract.CutOff(mock, 2)  # the resend's chunk cas lands, its record's commit times out
    with pytest.raises(StoreTimeout):
        store.push_update(job, delta, push_id=PushId(0, 2), record=contract.record(2, "a"))
    store.client = mock
    store.recover_worker(job, 0)
    weights, version = store.get_weights(job)
    np.testing.assert_array_equal(weights, 1 + delta)  # applied once
    assert version == 2 and store.worker_record(job, 0) == contract.record(2, "a")
    store.recover_worker(job, 0)  # twice is harmless
    np.testing.assert_array_equal(store.get_weights(job)[0], 1 + delta)

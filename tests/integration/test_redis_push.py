"""The dense push on a real redis-server, sent on one of redis-py's connections without its Pipeline
(store/redis_push.py): a connection lost before the commit is reconnected once and the push applied once; lost
with the commit in flight, the outcome is said to be unknown and a resend with the push's id finds it applied;
a refused command aborts the whole transaction; and the connection goes back to the pool in step with the
server (no WATCH left standing, no reply left unread)."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from faasgd.errors import StoreError, StoreUnavailable
from faasgd.store import PushId, keys, open_store, redis_push
from support.store_contract import CHUNK, new_job, record

pytestmark = pytest.mark.integration

LENGTH = 2 * CHUNK + 7


class DropReply:
    """Drops the connection as the `nth` list reply from now arrives (1: the MGET's, 2: the EXEC's), `times` times."""

    def __init__(self, monkeypatch, store, nth: int, times: int = 1):
        self.nth, self.left, self.seen, self.dropped = nth, times, 0, 0
        connection_class = store.client.connection_pool.connection_class
        original = connection_class.read_response

        def read_response(connection, *args, **kwargs):
            reply = original(connection, *args, **kwargs)
            if isinstance(reply, list) and self.left:
                self.seen += 1
                if self.seen == self.nth:
                    self.left, self.seen, self.dropped = self.left - 1, 0, self.dropped + 1
                    connection.disconnect()  # as a server gone would leave it
                    raise redis.ConnectionError("Connection closed by server.")
            return reply

        monkeypatch.setattr(connection_class, "read_response", read_response)


@pytest.fixture
def store(redis_server):
    with open_store(redis_server.url, chunk_floats=CHUNK, timeout_s=5.0) as opened:
        yield opened


def started(store) -> str:
    job = new_job()
    store.set_weights(job, np.zeros(LENGTH, np.float32), writers=2)
    return job


def test_a_connection_lost_before_the_commit_is_reconnected_and_the_push_applied_once(store, monkeypatch):
    job = started(store)
    drop = DropReply(monkeypatch, store, nth=1)  # the MGET's reply: nothing is committed yet
    out = np.zeros(LENGTH, np.float32)
    push = store.push_update(job, np.ones(LENGTH, np.float32), out, push_id=PushId(0, 1), record=record(1, "a"))
    assert drop.dropped == 1 and (push.applied, push.version, push.conflicts) == (True, 1, 0)
    weights, version = store.get_weights(job)
    assert version == 1 and np.all(weights == 1.0) and np.all(out == 1.0)
    assert store.worker_record(job, 0)["pushes"] == 1


def test_a_connection_lost_twice_before_the_commit_is_an_error_and_nothing_is_applied(store, monkeypatch):
    job = started(store)
    drop = DropReply(monkeypatch, store, nth=1, times=2)
    with pytest.raises(StoreUnavailable, match="connection lost during push_update; not applied"):
        store.push_update(job, np.ones(LENGTH, np.float32), push_id=PushId(0, 1), record=record(1, "a"))
    assert drop.dropped == 2
    weights, version = store.get_weights(job)
    assert version == 0 and not weights.any() and store.worker_record(job, 0) is None


def test_a_commit_whose_reply_was_lost_is_unknown_and_its_resend_is_found_applied(store, monkeypatch):
    job = started(store)
    drop = DropReply(monkeypatch, store, nth=2)  # the EXEC's reply: the server has applied the push
    ones = np.ones(LENGTH, np.float32)
    with pytest.raises(StoreUnavailable, match="it may or may not have been applied") as lost:
        store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "a"))
    assert drop.dropped == 1 and "a push id makes a resend safe" in str(lost.value)
    out = np.zeros(LENGTH, np.float32)
    resent = store.push_update(job, ones, out, push_id=PushId(0, 1), record=record(1, "a"))
    assert resent.applied and resent.version == 1  # ours, found applied: not added again
    weights, version = store.get_weights(job)
    assert version == 1 and np.all(weights == 1.0)


def test_a_refused_command_aborts_the_transaction_and_the_connection_serves_on(store, redis_server):
    job = started(store)
    admin = redis.Redis.from_url(redis_server.url)
    policy = admin.config_get("maxmemory-policy")["maxmemory-policy"]
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", 1)  # every write is refused: OOM
    try:
        with pytest.raises(StoreError, match="maxmemory") as refused:
            store.push_update(job, np.ones(LENGTH, np.float32), push_id=PushId(0, 1), record=record(1, "a"))
        assert store.url in str(refused.value)
    finally:
        admin.config_set("maxmemory", 0)
        admin.config_set("maxmemory-policy", policy)
        admin.close()
    weights, version = store.get_weights(job)
    assert version == 0 and not weights.any() and store.worker_record(job, 0) is None  # EXECABORT: none of it
    push = store.push_update(job, np.ones(LENGTH, np.float32), push_id=PushId(0, 1), record=record(1, "a"))
    assert (push.applied, push.version) == (True, 1)


def test_a_push_found_applied_leaves_no_watch_on_the_connection(store, redis_server):
    # the resend of an applied push ends without a commit; its WATCH must not stay on the pooled connection, where
    # another writer's change of the version would abort this store's next push (a conflict counted for nothing)
    job, ones = started(store), np.ones(LENGTH, np.float32)
    store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "a"))
    assert store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "a")).applied  # found applied
    assert len(store.client.connection_pool._available_connections) == 1  # the one connection, given back
    assert_no_watch_left(store, redis_server, job, seq=2, version=3)


def assert_no_watch_left(store, redis_server, job: str, seq: int, version: int) -> None:
    """Another writer moves the version, then this store's next push (worker 0's `seq`) must win at once: a WATCH
    left on its pooled connection would abort it, a conflict counted for nothing."""
    ones = np.ones(LENGTH, np.float32)
    with open_store(redis_server.url, chunk_floats=CHUNK) as other:
        other.push_update(job, ones, push_id=PushId(1, 1), record=record(1, "b"))
    push = store.push_update(job, ones, push_id=PushId(0, seq), record=record(seq, "a"))
    assert (push.applied, push.version, push.conflicts) == (True, version, 0)


def test_an_error_between_the_read_and_the_commit_leaves_no_watch_on_the_connection(store, redis_server):
    # a chunk gone: the push is refused after its WATCH and before any commit; the connection is not given back to
    # the pool watching the version, so another writer's change cannot abort this store's next push
    job, ones = started(store), np.ones(LENGTH, np.float32)
    chunk = store.client.get(keys.weights_chunk(job, 1))
    store.client.delete(keys.weights_chunk(job, 1))
    with pytest.raises(StoreError, match="weight chunk 1 is missing"):
        store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "a"))
    store.client.set(keys.weights_chunk(job, 1), chunk)
    assert_no_watch_left(store, redis_server, job, seq=1, version=2)


def test_a_push_found_applied_is_its_outcome_even_when_the_connection_drops_at_the_unwatch(store, monkeypatch):
    job, ones = started(store), np.ones(LENGTH, np.float32)
    store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "a"))
    original = redis_push.exchange

    def lost_at_unwatch(conn, commands):
        if commands == [("UNWATCH",)]:
            conn.disconnect()
            raise redis.ConnectionError("Connection closed by server.")
        return original(conn, commands)

    monkeypatch.setattr(redis_push, "exchange", lost_at_unwatch)
    resent = store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "a"))
    assert (resent.applied, resent.version) == (True, 1)  # decided before the drop: ours, applied once
    monkeypatch.setattr(redis_push, "exchange", original)
    assert store.push_update(job, ones, push_id=PushId(0, 2), record=record(2, "a")).version == 2  # reconnected

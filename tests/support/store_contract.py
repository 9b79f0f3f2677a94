"""The one contract every ParameterStore backend must meet: plain functions `check_*(store)`.

Unit tests run them over memory://, fakeredis and pymemcache's mock; integration tests over real
redis-server and memcached. Stores are opened with chunk_floats=CHUNK so weights span several chunks.
Each check uses its own fresh job id, so checks can share one server.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid

import numpy as np
import pytest

from faasgd.errors import ConfigError, JobNotFound, StoreConflict
from faasgd.store import PushId, keys, memcached_push

CHUNK = 1000  # chunk_floats the harnesses open stores with
LENGTHS = [1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 501]  # odd lengths, one and several chunks


def new_job() -> str:
    return "t-" + uuid.uuid4().hex[:12]


def weights(length: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(length).astype(np.float32)


def check_ping(store):
    store.ping()
    assert store.url.split("://")[0] in ("redis", "memcached", "memory")


def check_weights_round_trip(store):
    for length in LENGTHS:
        job, flat = new_job(), weights(length, seed=length)
        store.set_weights(job, flat)
        got, version = store.get_weights(job)
        assert got.dtype == np.float32 and got.shape == (length,)
        np.testing.assert_array_equal(got, flat)
        assert version == 0


def check_set_weights_with_a_version(store):
    job, flat = new_job(), weights(CHUNK + 5)
    store.set_weights(job, flat, version=41)
    assert store.get_weights(job)[1] == 41
    assert store.push_update(job, np.ones_like(flat)).version == 42
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError) as e:
            store.set_weights(job, flat, version=bad)
        assert e.value.field == "version"


def check_get_weights_into_out(store):
    job, flat = new_job(), weights(2 * CHUNK + 3)
    store.set_weights(job, flat)
    out = np.zeros(flat.size, dtype=np.float32)
    got, _ = store.get_weights(job, out=out)
    assert got is out
    np.testing.assert_array_equal(out, flat)
    for bad in (np.zeros(flat.size + 1, np.float32), np.zeros(flat.size, np.float64), [0.0] * flat.size):
        with pytest.raises(ConfigError) as e:
            store.get_weights(job, out=bad)
        assert e.value.field == "out"


def check_set_weights_accepts_other_dtypes(store):
    job = new_job()
    store.set_weights(job, np.arange(10, dtype=np.float64))
    np.testing.assert_array_equal(store.get_weights(job)[0], np.arange(10, dtype=np.float32))


def check_push_adds_exactly_and_counts_versions(store):
    job, length = new_job(), 2 * CHUNK + 17
    start = np.arange(length, dtype=np.float32)
    store.set_weights(job, start)
    expected = start.copy()
    for step in range(1, 4):
        delta = np.full(length, step, dtype=np.float32) - (np.arange(length) % 3)
        assert store.push_update(job, delta).version == step
        expected += delta.astype(np.float32)
    got, version = store.get_weights(job)
    np.testing.assert_array_equal(got, expected)
    assert version == 3
    store.set_weights(job, start)  # re-initialising resets the version
    assert store.get_weights(job)[1] == 0


def check_push_can_return_the_weights_it_wrote(store):
    job, flat = new_job(), weights(2 * CHUNK + 7)
    store.set_weights(job, flat)
    out = np.zeros_like(flat)
    version = store.push_update(job, np.ones_like(flat), out=out).version
    np.testing.assert_array_equal(out, flat + 1)
    assert (version, *store.get_weights(job)[1:]) == (1, 1)
    np.testing.assert_array_equal(store.get_weights(job)[0], out)
    with pytest.raises(ConfigError) as e:
        store.push_update(job, np.ones_like(flat), out=np.zeros(3, np.float32))
    assert e.value.field == "out"


def check_push_rejects_bad_delta(store):
    job = new_job()
    store.set_weights(job, np.zeros(10, np.float32))
    for bad, why in ((np.zeros(11), "length"), (np.zeros((2, 5)), "shape"), (np.full(10, np.nan), "NaN")):
        with pytest.raises(ConfigError) as e:
            store.push_update(job, bad)
        assert e.value.field == "delta", why
    assert store.get_weights(job)[1] == 0  # nothing was written


def check_missing_job(store):
    job = new_job()
    with pytest.raises(JobNotFound) as e:
        store.get_weights(job)
    assert e.value.job_id == job
    with pytest.raises(JobNotFound):
        store.push_update(job, np.zeros(3, np.float32))


def check_records(store):
    job = new_job()
    assert store.get_record(job, "config") is None
    store.put_record(job, "config", {"batch_size": 32, "learning_rate": 0.05, "name": "ünï"})
    store.put_record(job, "progress:3", {"epoch": 1})
    assert store.get_record(job, "config") == {"batch_size": 32, "learning_rate": 0.05, "name": "ünï"}
    store.put_record(job, "progress:3", {"epoch": 2})  # overwrite
    assert store.get_records(job, ["config", "progress:3", "done"]) == {
        "config": {"batch_size": 32, "learning_rate": 0.05, "name": "ünï"},
        "progress:3": {"epoch": 2},
        "done": None,
    }
    assert store.get_records(job, []) == {}
    store.delete_record(job, "config")
    store.delete_record(job, "never-written")  # absent is fine
    assert store.get_record(job, "config") is None
    assert store.get_record(new_job(), "progress:3") is None  # jobs do not share records
    with pytest.raises(ConfigError) as e:
        store.put_record(job, "x", ["not", "a", "dict"])
    assert e.value.field == "value"


def check_add_record_only_once(store):
    job = new_job()
    assert store.add_record(job, "lease:1:7", {"owner": "a"}) is True
    assert store.add_record(job, "lease:1:7", {"owner": "b"}) is False
    assert store.get_record(job, "lease:1:7") == {"owner": "a"}
    store.delete_record(job, "lease:1:7")
    assert store.add_record(job, "lease:1:7", {"owner": "c"}) is True


def check_record_ttl(store, advance=time.sleep):
    """Records written with ttl_s expire; `advance(seconds)` lets time pass (a fake clock in unit tests)."""
    job = new_job()
    store.put_record(job, "heartbeat", {"t": 1}, ttl_s=1)
    assert store.add_record(job, "lease:0:1", {"owner": "a"}, ttl_s=1) is True
    store.put_record(job, "forever", {"t": 2})
    assert store.get_record(job, "heartbeat") == {"t": 1}
    waited = 0.0
    while store.get_records(job, ["heartbeat", "lease:0:1"]) != {"heartbeat": None, "lease:0:1": None}:
        assert waited < 4.0, "records with ttl_s=1 did not expire"  # memcached's clock ticks once a second
        advance(0.1)
        waited += 0.1
    assert store.add_record(job, "lease:0:1", {"owner": "b"}, ttl_s=1) is True  # expired lease is free
    assert store.get_record(job, "forever") == {"t": 2}
    with pytest.raises(ConfigError) as e:
        store.put_record(job, "x", {}, ttl_s=-1)
    assert e.value.field == "ttl_s"


def check_incr(store):
    job = new_job()
    assert store.incr(job, "pushes") == 1
    assert store.incr(job, "pushes") == 2
    assert store.incr(job, "pushes", by=5) == 7
    assert store.incr(job, "samples", by=32) == 32
    assert store.incr(job, "samples", by=0) == 32
    with pytest.raises(ConfigError) as e:
        store.incr(job, "pushes", by=-1)
    assert e.value.field == "by"


def check_events_in_order(store):
    job = new_job()
    assert store.events(job) == []
    for i in range(5):
        store.append_event(job, {"i": i, "kind": "progress"})
    assert [e["i"] for e in store.events(job)] == [0, 1, 2, 3, 4]
    assert [e["i"] for e in store.events(job, start=3)] == [3, 4]
    assert store.events(job, start=9) == []
    assert store.events(new_job()) == []


def check_names_validated(store):
    for bad in ("", "a b", "x" * 65, "a:b", "é", "a/b", None, 7):
        with pytest.raises(ConfigError) as e:
            store.get_record(bad, "config")
        assert e.value.field == "job_id", bad
        with pytest.raises(ConfigError) as e:
            store.set_weights(bad, np.zeros(2))
        assert e.value.field == "job_id", bad
    for bad in ("", "with space", "n" * 129, "a\nb", None):
        with pytest.raises(ConfigError) as e:
            store.put_record(new_job(), bad, {})
        assert e.value.field == "name", bad
    longest = keys.record("j" * keys.MAX_JOB_ID, "n" * keys.MAX_NAME)
    assert len(longest.encode()) < 250  # memcached's key limit


def check_wire_format(store):
    """Chunks are raw little-endian float32 bytes under the documented keys (on Memcached after the header
    of push numbers each chunk holds, empty at first); records are JSON."""
    job, flat = new_job(), weights(2 * CHUNK + 500, seed=3)
    store.set_weights(job, flat)
    wire = flat.astype("<f4")
    header = memcached_push.join({}, b"") if store.url.startswith("memcached") else b""
    assert store.client.get(keys.weights_chunk(job, 0)) == header + wire[:CHUNK].tobytes()
    assert store.client.get(keys.weights_chunk(job, 2)) == header + wire[2 * CHUNK:].tobytes()
    assert int(store.client.get(keys.weights_version(job))) == 0
    store.put_record(job, "result", {"accuracy": 0.9})
    assert json.loads(store.client.get(keys.record(job, "result"))) == {"accuracy": 0.9}


def check_conflicts_counted(store, other):
    """Another client writes between our read and our conditional write: a real conflict, retried."""
    job, length = new_job(), 2 * CHUNK + 5
    store.set_weights(job, np.zeros(length, np.float32))
    fired = []

    def interleave(job_id):
        if not fired:
            fired.append(job_id)
            assert other.push_update(job_id, np.ones(length, np.float32)).version == 1

    store._after_read_hook = interleave
    try:
        push = store.push_update(job, np.full(length, 2, np.float32))
    finally:
        store._after_read_hook = None
    assert fired == [job]
    assert push.version == 2 and push.conflicts >= 1 and push.retries >= 1
    assert store.read_counter(job, "conflicts") == push.conflicts  # the store counts what the pushes saw
    assert other.read_counter(job, "conflicts") == push.conflicts
    got, version = other.get_weights(job)
    np.testing.assert_array_equal(got, np.full(length, 3, np.float32))  # both deltas, once each
    assert version == 2


def check_conflicts_bounded(store, other):
    """When every attempt conflicts, push_update gives up with StoreConflict after max_retries."""
    job, length = new_job(), CHUNK + 5
    store.set_weights(job, np.zeros(length, np.float32))
    store._after_read_hook = lambda job_id: other.push_update(job_id, np.ones(length, np.float32))
    policy, store.conflict_policy = store.conflict_policy, dataclasses.replace(store.conflict_policy, max_attempts=4)
    try:
        with pytest.raises(StoreConflict) as e:
            store.push_update(job, np.full(length, 100, np.float32))
    finally:
        store._after_read_hook, store.conflict_policy = None, policy
    assert store.url in str(e.value) and "after 3 retries" in str(e.value)
    got, version = other.get_weights(job)
    np.testing.assert_array_equal(got, np.full(length, 4, np.float32))  # 4 interleaved pushes, ours never
    assert version == 4


def check_clients_share_data(store, other):
    job = new_job()
    store.set_weights(job, np.arange(5, dtype=np.float32))
    other.push_update(job, np.ones(5, np.float32))
    np.testing.assert_array_equal(store.get_weights(job)[0], np.arange(1, 6, dtype=np.float32))
    other.put_record(job, "done", {"ok": True})
    assert store.get_record(job, "done") == {"ok": True}


def record(seq: int, owner: str, state: str = "running", **extra) -> dict:
    return {"pushes": seq, "owner": owner, "state": state, **extra}


def check_push_ids_apply_each_push_once(store):
    """A push number of a worker is added once: its resend is recognised as ours, another owner's as superseded."""
    job, length = new_job(), 2 * CHUNK + 3
    store.set_weights(job, np.zeros(length, np.float32), writers=2)
    ones = np.ones(length, np.float32)
    first = store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "call-a"))
    assert first.applied and first.version == 1
    out = np.zeros(length, np.float32)
    again = store.push_update(job, ones, out, push_id=PushId(0, 1), record=record(1, "call-a"))  # a resend
    assert again.applied and again.version == 1  # ours, already in: not added again
    np.testing.assert_array_equal(out, ones)
    other = store.push_update(job, 5 * ones, out, push_id=PushId(0, 1), record=record(1, "call-b"))
    assert not other.applied and other.version == 1  # another invocation of worker 0: superseded
    assert store.push_update(job, ones, push_id=PushId(1, 1), record=record(1, "call-c")).version == 2
    assert store.push_update(job, ones, push_id=PushId(0, 2), record=record(2, "call-a")).version == 3
    weights, version = store.get_weights(job)
    np.testing.assert_array_equal(weights, np.full(length, 3, np.float32))
    assert version == 3 == sum(store.worker_record(job, w)["pushes"] for w in (0, 1))
    assert store.worker_record(job, 0) == record(2, "call-a")  # written with the push
    with pytest.raises(ConfigError) as bad:
        store.push_update(job, ones, push_id=PushId(0, 3), record=record(2, "call-a"))
    assert bad.value.field == "record"


def check_worker_records_never_go_back(store):
    """Writes between pushes never undo a push, nor turn a final record back into a running one."""
    job, length = new_job(), 10
    store.set_weights(job, np.zeros(length, np.float32), writers=1)
    assert store.update_worker(job, 0, record(0, "call-a", epoch=0))
    store.push_update(job, np.ones(length, np.float32), push_id=PushId(0, 1), record=record(1, "call-a"))
    assert store.update_worker(job, 0, record(1, "call-a", epoch=1))  # the same pushes, further on
    assert not store.update_worker(job, 0, record(0, "call-b"))  # a stale invocation
    assert store.update_worker(job, 0, record(1, "call-a", "finished"))
    assert not store.update_worker(job, 0, record(1, "call-a", "running"))
    assert store.worker_record(job, 0)["state"] == "finished"
    store.recover_worker(job, 0)  # nothing half-done: nothing changes
    assert store.get_weights(job)[1] == 1


def check_server_time(store):
    """The store's clock is the wall clock's epoch (within a second's resolution plus slack), and never runs back."""
    first = store.server_time()
    assert abs(first - time.time()) < 5.0
    second = store.server_time()
    assert second >= first


def check_kept_copy(store):
    """A kept copy of parameters reads back exactly, pushes to the job's weights leave it unchanged, names are checked."""
    job, flat = new_job(), weights(2 * CHUNK + 7, seed=3)
    store.set_weights(job, flat)
    assert store.read_copy(job, "model") is None  # none before it is written
    store.keep_copy(job, "model", flat)
    store.push_update(job, np.ones_like(flat))
    np.testing.assert_array_equal(store.read_copy(job, "model"), flat)
    assert store.read_copy(job, "model").dtype == np.float32
    store.keep_copy(job, "other", flat[:5])  # another name, another length: separate
    np.testing.assert_array_equal(store.read_copy(job, "other"), flat[:5])
    with pytest.raises(ConfigError):
        store.keep_copy(job, "bad name", flat)
    with pytest.raises(ConfigError):
        store.keep_copy(job, "nan", np.array([np.nan], np.float32))


SINGLE_CLIENT_CHECKS = [
    check_ping,
    check_weights_round_trip,
    check_get_weights_into_out,
    check_set_weights_with_a_version,
    check_set_weights_accepts_other_dtypes,
    check_push_adds_exactly_and_counts_versions,
    check_push_can_return_the_weights_it_wrote,
    check_push_rejects_bad_delta,
    check_push_ids_apply_each_push_once,
    check_worker_records_never_go_back,
    check_missing_job,
    check_records,
    check_add_record_only_once,
    check_record_ttl,
    check_incr,
    check_events_in_order,
    check_names_validated,
    check_wire_format,
    check_server_time,
    check_kept_copy,
]
TWO_CLIENT_CHECKS = [check_conflicts_counted, check_conflicts_bounded, check_clients_share_data]

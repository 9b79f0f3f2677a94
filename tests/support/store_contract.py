"""The one contract every ParameterStore backend must meet: plain functions `check_*(store)`.

Unit tests run them over memory://, fakeredis and pymemcache's mock; integration tests over real
redis-server and memcached. Stores are opened with chunk_floats=CHUNK so weights span several chunks.
Each check uses its own fresh job id, so checks can share one server.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
import uuid

import numpy as np
import pytest

from faasgd.errors import ConfigError, JobNotFound, StoreConflict, StoreError, StoreTimeout
from faasgd.store import ParameterStore, PushId, Snapshot, UpdateRule, keys, memcached_push, push_codec
from faasgd.store.blobs import BLOB_CHUNK_BYTES
from faasgd.store.update_rule import ADAGRAD_EPS, ADAGRAD_G0

CHUNK = 1000  # chunk_floats the harnesses open stores with
LENGTHS = [1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 501]  # odd lengths, one and several chunks


def new_job() -> str:
    return "t-" + uuid.uuid4().hex[:12]


def weights(length: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(length).astype(np.float32)


def check_ping(store):
    store.ping()
    assert store.url.split("://")[0] in ("redis", "redis-cluster", "memcached", "memory")


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


def stored_chunk_floats(store, job: str, most: int) -> int:
    """Weights per chunk of `job` as its meta records them: `most` on a store of one server; at most that on one
    choosing its own layout to spread chunks over several servers (ParameterStore._chunk_floats overridden)."""
    size = store._weights_meta(job, fresh=True).chunk_floats
    spreads = type(store)._chunk_floats is not ParameterStore._chunk_floats
    assert size == most or (spreads and 1 <= size <= most), (size, most)
    return size


def check_wire_format(store):
    """Chunks are raw little-endian float32 bytes under the documented keys (on Memcached after the header
    of push numbers each chunk holds, empty at first); records are JSON."""
    job, flat = new_job(), weights(2 * CHUNK + 500, seed=3)
    store.set_weights(job, flat)
    wire, size = flat.astype("<f4"), stored_chunk_floats(store, job, CHUNK)
    last = (flat.size - 1) // size
    header = memcached_push.join({}, b"") if store.url.startswith("memcached") else b""
    assert store.client.get(keys.weights_chunk(job, 0)) == header + wire[:size].tobytes()
    assert store.client.get(keys.weights_chunk(job, last)) == header + wire[last * size:].tobytes()
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


def check_out_after_a_lost_race(store, other):
    """A push with an id and `out` that loses a race (another client pushes between its read and its write) is redone:
    `out` holds the weights with both deltas, as stored, whatever the lost attempt had written into it."""
    job, length = new_job(), 2 * CHUNK + 5
    store.set_weights(job, np.zeros(length, np.float32), writers=1)
    fired = []

    def interleave(job_id):
        if not fired:
            fired.append(job_id)
            other.push_update(job_id, np.ones(length, np.float32))

    store._after_read_hook = interleave
    out = np.full(length, np.nan, np.float32)
    try:
        push = store.push_update(job, np.full(length, 2, np.float32), out, push_id=PushId(0, 1), record=record(1, "a"))
    finally:
        store._after_read_hook = None
    assert fired == [job] and push.applied and push.conflicts >= 1
    np.testing.assert_array_equal(out, np.full(length, 3, np.float32))
    np.testing.assert_array_equal(other.get_weights(job)[0], out)


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
    np.testing.assert_array_equal(out, ones)  # ... and `out` untouched
    assert store.push_update(job, ones, push_id=PushId(1, 1), record=record(1, "call-c")).version == 2
    assert store.push_update(job, ones, push_id=PushId(0, 2), record=record(2, "call-a")).version == 3
    weights, version = store.get_weights(job)
    np.testing.assert_array_equal(weights, np.full(length, 3, np.float32))
    assert version == 3 == sum(store.worker_record(job, w)["pushes"] for w in (0, 1))
    assert store.worker_record(job, 0) == record(2, "call-a")  # written with the push
    with pytest.raises(ConfigError) as bad:
        store.push_update(job, ones, push_id=PushId(0, 3), record=record(2, "call-a"))
    assert bad.value.field == "record"


def check_fetch_and_push_report_the_steps_the_weights_hold(store):
    """Steps held = the writers' `pushed_steps` summed, read with the weights, and reported by each push."""
    job, length = new_job(), 2 * CHUNK + 3
    store.set_weights(job, np.zeros(length, np.float32), writers=2)
    out = np.empty(length, np.float32)
    assert store.fetch(job, out) == Snapshot(0, 0)
    ones = np.ones(length, np.float32)
    first = store.push_update(job, ones, push_id=PushId(0, 1), record=record(1, "call-a", pushed_steps=3))
    assert (first.version, first.steps) == (1, 3)
    second = store.push_update(job, ones, push_id=PushId(1, 1), record=record(1, "call-b", pushed_steps=5))
    assert (second.version, second.steps) == (2, 8)
    again = store.push_update(job, ones, push_id=PushId(1, 1), record=record(1, "call-b", pushed_steps=5))
    assert (again.version, again.steps) == (2, 8)  # a resend: as found
    assert store.push_update(job, ones, push_id=PushId(0, 2), record=record(2, "call-a", pushed_steps=7)).steps == 12
    assert store.update_worker(job, 1, record(1, "call-b", "finished", pushed_steps=5, step=9))  # steps not pushed
    assert store.fetch(job, out) == Snapshot(3, 12)
    np.testing.assert_array_equal(out, np.full(length, 3, np.float32))
    assert store.get_weights(job)[1] == 3


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


# ---- update rules: each against a single-process oracle in numpy float32 ---------------------------
LR = 0.05  # the workers' learning rate in the rule checks
RULE_CASES = {  # name -> (the rule a job is created with, the oracle's number of workers)
    "sum": UpdateRule("sum"),
    "average-1": UpdateRule("average", workers=1),
    "average-3": UpdateRule("average", workers=3),
    "adagrad": UpdateRule("adagrad", learning_rate=LR),
}


class Oracle:
    """One process applying the same pushes by the rule: plain SGD (sum, average of one worker is the same),
    plain AdaGrad (w -= lr g / (sqrt(G) + eps) after G += g^2), all in float32."""

    def __init__(self, rule: UpdateRule, start: np.ndarray):
        self.rule, self.w, self.G = rule, start.astype(np.float32).copy(), np.full(start.size, ADAGRAD_G0, np.float32)

    def push(self, gradient: np.ndarray) -> np.ndarray:
        """Apply one push of `gradient` (what a worker summed); the delta the worker sends for it."""
        delta = (gradient * np.float32(-LR)).astype(np.float32)  # what the worker pushes: -lr x g
        if self.rule.name == "sum":
            self.w = self.w - np.float32(LR) * gradient
        elif self.rule.name == "average":
            self.w = self.w + delta / np.float32(self.rule.workers)
        else:
            self.G = self.G + gradient * gradient
            self.w = self.w - np.float32(LR) * gradient / (np.sqrt(self.G) + np.float32(ADAGRAD_EPS))
        return delta


def assert_rule_matches(rule: UpdateRule, got: np.ndarray, oracle: Oracle) -> None:
    if rule.name == "adagrad":  # the store recovers g = -d / lr: an ulp or two from the worker's g
        np.testing.assert_allclose(got, oracle.w, rtol=1e-6, atol=1e-6)
    else:  # the same float32 additions in the same order: bit for bit
        np.testing.assert_array_equal(got, oracle.w)


def gradients(length: int, count: int, seed: int) -> list[np.ndarray]:
    """`count` gradients of very different sizes per parameter (AdaGrad's point), some exactly zero."""
    rng = np.random.default_rng(seed)
    scale = np.float32(10.0) ** rng.uniform(-3, 1, length).astype(np.float32)
    out = [(rng.standard_normal(length).astype(np.float32) * scale).astype(np.float32) for _ in range(count)]
    for g in out:
        g[:5] = 0.0  # never-touched parameters stay where they are under every rule
    return out


def check_update_rules_match_the_oracle(store):
    """Pushes with ids over several chunks, applied by each rule, equal one process applying them; a resent
    push is not applied twice, and the push's `out` is the weights (never adagrad's G)."""
    length = 2 * CHUNK + 501
    for name, rule in RULE_CASES.items():
        job, start = new_job(), weights(length, seed=11)
        store.set_weights(job, start, writers=1, rule=rule)
        oracle, out = Oracle(rule, start), np.zeros(length, np.float32)
        for seq, g in enumerate(gradients(length, 6, seed=len(name)), start=1):
            delta = oracle.push(g)
            assert store.push_update(job, delta, out, push_id=PushId(0, seq), record=record(seq, "a")).version == seq
            assert_rule_matches(rule, out, oracle)
            again = store.push_update(job, delta, out, push_id=PushId(0, seq), record=record(seq, "a"))  # a resend
            assert again.applied and again.version == seq, name
        got, version = store.get_weights(job)
        assert version == 6, name
        assert_rule_matches(rule, got, oracle)
        np.testing.assert_array_equal(got[:5], start[:5])


def compressed_pushes(length: int, count: int, seed: int) -> list:
    """`count` pushes of a worker with error feedback, alternating f16 and top-k (a few entries in every chunk
    and some chunks untouched), from updates of very different sizes."""
    codecs = [push_codec.parse_codec("f16"), push_codec.parse_codec("topk:0.01")]
    residual, out = np.zeros(length, np.float32), []
    for i, g in enumerate(gradients(length, count, seed)):
        out.append(codecs[i % 2].encode((g * np.float32(-LR)).astype(np.float32), residual))
    return out


def check_compressed_pushes_keep_the_exact_sum(store):
    """f16 and sparse pushes with ids are each applied once, as the float32 delta they stand for, by every rule:
    the weights equal one process adding the decoded pushes (bit for bit, adagrad to an ulp); a resend and a
    superseded push add nothing; the version is the sum of the workers' pushes."""
    length = 2 * CHUNK + 501
    for name, rule in RULE_CASES.items():
        job, start = new_job(), weights(length, seed=3)
        store.set_weights(job, start, writers=2, rule=rule)
        oracle, out, expected = Oracle(rule, start), np.zeros(length, np.float32), start.copy()
        for seq, payload in enumerate(compressed_pushes(length, 6, seed=7), start=1):
            delta = push_codec.as_delta(payload, length)
            oracle.push(delta / np.float32(-LR))  # adagrad's: the gradient the delta stands for
            expected += delta / np.float32(rule.workers if rule.name == "average" else 1)  # the exact sum
            push = store.push_update(job, payload, out, push_id=PushId(seq % 2, (seq + 1) // 2),
                                     record=record((seq + 1) // 2, f"call-{seq % 2}"))
            assert push.applied and push.version == seq, name
            again = store.push_update(job, payload, out, push_id=PushId(seq % 2, (seq + 1) // 2),
                                      record=record((seq + 1) // 2, f"call-{seq % 2}"))  # a resend: not added again
            assert again.applied and again.version == seq, name
            other = store.push_update(job, payload, out, push_id=PushId(seq % 2, (seq + 1) // 2),
                                      record=record((seq + 1) // 2, "call-x"))  # another invocation: superseded
            assert not other.applied and other.version == seq, name
        got, version = store.get_weights(job)
        assert version == 6 == sum(store.worker_record(job, w)["pushes"] for w in (0, 1)), name
        if rule.name == "adagrad":
            assert_rule_matches(rule, got, oracle)
        else:  # the exact sum: start plus every decoded push (by the rule), in float32, in order: bit for bit
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, out)


def check_compressed_push_rejects_bad_payloads(store):
    """A malformed sparse or half push is refused naming `delta`, before anything is written."""
    job, length = new_job(), CHUNK + 5
    store.set_weights(job, np.zeros(length, np.float32))
    u32, f32 = np.uint32, np.float32
    bad = {
        "index past the end": push_codec.Sparse(length, np.array([length], u32), np.ones(1, f32)),
        "unsorted": push_codec.Sparse(length, np.array([5, 2], u32), np.ones(2, f32)),
        "duplicate": push_codec.Sparse(length, np.array([2, 2], u32), np.ones(2, f32)),
        "other length": push_codec.Sparse(length + 1, np.array([1], u32), np.ones(1, f32)),
        "values and indices": push_codec.Sparse(length, np.array([1, 2], u32), np.ones(1, f32)),
        "NaN": push_codec.Sparse(length, np.array([1], u32), np.array([np.nan], f32)),
        "half NaN": push_codec.Half(np.full(length, np.nan, np.float16)),
        "half too short": push_codec.Half(np.zeros(length - 1, np.float16)),
    }
    for why, payload in bad.items():
        with pytest.raises(ConfigError) as e:
            store.push_update(job, payload)
        assert e.value.field == "delta", why
    assert store.get_weights(job)[1] == 0  # nothing was written
    store.push_update(job, push_codec.Sparse(length, np.array([0, length - 1], u32), np.array([1, -2], f32)))
    got = store.get_weights(job)[0]
    assert (got[0], got[-1], np.count_nonzero(got)) == (1.0, -2.0, 2)


def check_adagrad_state_stored_with_the_weights(store):
    """An adagrad chunk is [w | G] float32 (on Memcached after its header), half as many weights per chunk."""
    job, flat = new_job(), weights(2 * CHUNK + 7, seed=5)
    store.set_weights(job, flat, rule=UpdateRule("adagrad", learning_rate=LR))
    half = stored_chunk_floats(store, job, CHUNK // 2)
    last = (flat.size - 1) // half
    header = memcached_push.join({}, b"") if store.url.startswith("memcached") else b""
    raw = store.client.get(keys.weights_chunk(job, 0))
    assert raw == header + flat[:half].astype("<f4").tobytes() + np.full(half, ADAGRAD_G0, "<f4").tobytes()
    g = np.linspace(-2, 2, flat.size).astype(np.float32)
    store.push_update(job, g * np.float32(-LR))
    stored = np.frombuffer(store.client.get(keys.weights_chunk(job, 1))[len(header):], "<f4")
    np.testing.assert_allclose(stored[half:], ADAGRAD_G0 + g[half:2 * half] ** 2, rtol=2e-6)  # G of chunk 1's weights
    tail = flat.size - last * half  # one store: 4 chunks of 500, one of 7
    assert len(store.client.get(keys.weights_chunk(job, last))) == len(header) + tail * 2 * 4
    assert store.client.get(keys.weights_chunk(job, last + 1)) is None


def check_update_rule_validated(store):
    """A bad rule is a ConfigError naming its field, and nothing is written."""
    flat = np.zeros(10, np.float32)
    for bad, field in ((lambda: UpdateRule("mean"), "update_rule"),
                       (lambda: UpdateRule("adagrad"), "learning_rate"),
                       (lambda: UpdateRule("average", workers=0), "number_of_workers")):
        with pytest.raises(ConfigError) as e:
            bad()
        assert e.value.field == field
    job = new_job()
    with pytest.raises(ConfigError) as e:
        store.set_weights(job, flat, rule="adagrad")
    assert e.value.field == "update_rule"
    with pytest.raises(JobNotFound):
        store.get_weights(job)


class CutOff:
    """A memcached client that times out on the `n`-th cas (after that many chunks or records went in)."""

    def __init__(self, inner, n):
        self.inner, self.n = inner, n

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def cas(self, *args, **kwargs):
        self.n -= 1
        if self.n == 0:
            raise socket.timeout("timed out")
        return self.inner.cas(*args, **kwargs)


def check_half_applied_adagrad_push_finished_once(store):
    """Memcached: an adagrad push cut off after some chunks (weights and G moved together) is finished
    exactly once, by a resend or by the roll-forward from its copy: the result is AdaGrad's, as if whole."""
    rule, length = UpdateRule("adagrad", learning_rate=LR), 2 * CHUNK + 7  # 5 chunks of 500 weights
    for finish in ("resend", "roll forward"):
        for cut_at in (2, 4, 6):  # after chunk 1 or 3 of 5, or at the record's commit
            job, start = new_job(), weights(length, seed=cut_at)
            store.set_weights(job, start, writers=1, rule=rule)
            oracle = Oracle(rule, start)
            first, second = gradients(length, 2, seed=cut_at)
            store.push_update(job, oracle.push(first), push_id=PushId(0, 1), record=record(1, "a"))
            delta, client = oracle.push(second), store.client
            store.client = CutOff(client, cut_at)
            try:
                with pytest.raises(StoreTimeout):
                    store.push_update(job, delta, push_id=PushId(0, 2), record=record(2, "a"))
            finally:
                store.client = client
            if finish == "resend":
                assert store.push_update(job, delta, push_id=PushId(0, 2), record=record(2, "a")).version == 2
            else:
                store.recover_worker(job, 0)
                store.recover_worker(job, 0)  # twice is harmless
            got, version = store.get_weights(job)
            assert version == 2 == store.worker_record(job, 0)["pushes"], (finish, cut_at)
            assert_rule_matches(rule, got, oracle)


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


def check_blobs(store):
    """A blob (bytes) reads back exactly across chunks, the empty blob too; absent is None; a blob whose chunks
    do not match its meta is lost state, never returned; names are checked."""
    job = new_job()
    data = np.random.default_rng(5).bytes(2 * BLOB_CHUNK_BYTES + 11)  # three chunks, each below memcached's 1 MB
    assert store.get_blob(job, "model:0") is None
    store.put_blob(job, "model:0", data)
    store.put_blob(job, "empty", b"")
    assert store.get_blob(job, "model:0") == data and store.get_blob(job, "empty") == b""
    store.put_blob(job, "model:0", data[:5])  # overwritten by a shorter one
    assert store.get_blob(job, "model:0") == data[:5]
    store._put(keys.blob_chunks(job, "model:0", 1)[0], b"XXXXX", 60)  # a chunk changed under its meta
    with pytest.raises(StoreError, match="does not match"):
        store.get_blob(job, "model:0")
    store.put_blob(job, "residual:0:3", data)
    store.delete_blob(job, "residual:0:3")  # gone, chunks and all; deleting it again (or anything absent) is fine
    store.delete_blob(job, "residual:0:3")
    assert store.get_blob(job, "residual:0:3") is None and store.get_blob(job, "empty") == b""
    assert store._get_many(keys.blob_chunks(job, "residual:0:3", 3)) == [None] * 3
    with pytest.raises(ConfigError):
        store.put_blob(job, "bad name", data)
    with pytest.raises(ConfigError):
        store.put_blob(job, "text", "not bytes")


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
    check_fetch_and_push_report_the_steps_the_weights_hold,
    check_worker_records_never_go_back,
    check_missing_job,
    check_records,
    check_add_record_only_once,
    check_record_ttl,
    check_incr,
    check_events_in_order,
    check_names_validated,
    check_wire_format,
    check_update_rules_match_the_oracle,
    check_adagrad_state_stored_with_the_weights,
    check_compressed_pushes_keep_the_exact_sum,
    check_compressed_push_rejects_bad_payloads,
    check_update_rule_validated,
    check_server_time,
    check_kept_copy,
    check_blobs,
]
MEMCACHED_CHECKS = [check_half_applied_adagrad_push_finished_once]  # what only Memcached can leave half-done
TWO_CLIENT_CHECKS = [check_conflicts_counted, check_out_after_a_lost_race, check_conflicts_bounded,
                     check_clients_share_data]

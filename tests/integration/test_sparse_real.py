"""Sparse pushes added inside a real redis-server (store/redis_sparse.py) against the client-side add, bit for bit.

Two stores on one server: `server` adds top-k pushes with the Redis function, `client` is the same store with
the function switched off (today's WATCH/MULTI path). The same pushes, ids and records go to two jobs with
the same start; the stored chunks (adagrad's G included) and what each push reports must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest
import redis

from faasgd.errors import JobNotFound, StoreError, StoreUnavailable
from faasgd.store import PushId, UpdateRule, keys, meter, open_store, push_codec
from support import store_contract as contract
from support.store_contract import CHUNK, LR, RULE_CASES, new_job, record

pytestmark = pytest.mark.integration

LENGTH = 3 * CHUNK + 250  # several chunks (adagrad: 7 of 500 weights), the last one short


@pytest.fixture
def stores(redis_server):
    with open_store(redis_server.url, chunk_floats=CHUNK, timeout_s=5.0) as server, \
            open_store(redis_server.url, chunk_floats=CHUNK, timeout_s=5.0) as client:
        client._server_add.supported = False  # today's client-side add, for comparison
        yield server, client


def fcalls(store) -> int:
    """FCALLs the server has run to the end so far (its command statistics; a call of a function it lacked fails)."""
    stats = store.client.info("commandstats").get("cmdstat_fcall", {})
    return int(stats.get("calls", 0)) - int(stats.get("failed_calls", 0)) - int(stats.get("rejected_calls", 0))


def hard_updates(count: int, seed: int) -> list[np.ndarray]:
    """Updates whose entries span float32's range down to subnormals (up to ~1e3, so that adagrad's squared
    gradients stay finite and top-k's largest entries exercise every step of the rule), both signs."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        scale = (np.float32(10.0) ** rng.uniform(-42, 3, LENGTH)).astype(np.float32)
        out.append((rng.standard_normal(LENGTH).astype(np.float32) * scale).astype(np.float32))
    return out


def stored(store, job: str) -> list[bytes]:
    return store.client.mget([keys.weights_version(job), *keys.weights_chunks(job, 64)])


@pytest.mark.parametrize("fraction", ["0.01", "0.3"])
@pytest.mark.parametrize("case", list(RULE_CASES), ids=list(RULE_CASES))
def test_server_side_add_equals_the_client_side_add_bit_for_bit(stores, case, fraction):
    server, client = stores
    rule, codec = RULE_CASES[case], push_codec.parse_codec(f"topk:{fraction}")
    start = (contract.weights(LENGTH, seed=4) * np.float32(1e3)).astype(np.float32)
    start[::7] = np.float32(1e-41)  # subnormal weights
    jobs = [new_job(), new_job()]
    for store, job in zip(stores, jobs):
        store.set_weights(job, start, writers=1, rule=rule)
    residual, before = np.zeros(LENGTH, np.float32), fcalls(server)
    for seq, update in enumerate(hard_updates(5, seed=len(case)), start=1):
        payload = codec.encode(update, residual)
        outs = [np.zeros(LENGTH, np.float32), np.zeros(LENGTH, np.float32)]
        mine = record(seq, "a", pushed_steps=seq)
        pushes = [store.push_update(job, payload, out, push_id=PushId(0, seq), record=mine)
                  for store, job, out in zip(stores, jobs, outs)]
        assert pushes[0] == pushes[1] and pushes[0].applied and pushes[0].version == seq
        assert outs[0].tobytes() == outs[1].tobytes()
    assert fcalls(server) == before + 5  # every push went through the function, each in one call
    assert stored(server, jobs[0]) == stored(client, jobs[1])  # chunks, G and version: the same bytes
    assert server.worker_record(jobs[0], 0) == client.worker_record(jobs[1], 0) == record(5, "a", pushed_steps=5)


def test_a_resent_push_is_applied_once_and_a_superseded_one_not_at_all(stores):
    server, client = stores
    rule = UpdateRule("adagrad", learning_rate=LR)
    jobs = [new_job(), new_job()]
    for store, job in zip(stores, jobs):
        store.set_weights(job, contract.weights(LENGTH, seed=9), writers=2, rule=rule)
    residual, codec = np.zeros(LENGTH, np.float32), push_codec.parse_codec("topk:0.05")
    first, second = (codec.encode(u, residual) for u in hard_updates(2, seed=1))
    for store, job in zip(stores, jobs):
        store.push_update(job, first, push_id=PushId(0, 1), record=record(1, "call-a", pushed_steps=2))
        store.push_update(job, first, push_id=PushId(1, 1), record=record(1, "call-b", pushed_steps=3))
    after_two = stored(server, jobs[0])
    for store, job in zip(stores, jobs):
        out = np.zeros(LENGTH, np.float32)
        again = store.push_update(job, second, out, push_id=PushId(1, 1), record=record(1, "call-b", pushed_steps=3))
        assert (again.applied, again.version, again.steps) == (True, 2, 5)  # ours, already in: as found
        np.testing.assert_array_equal(out, store.get_weights(job)[0])  # and the weights it returns are the stored ones
        other = store.push_update(job, second, out, push_id=PushId(0, 1), record=record(1, "call-x", pushed_steps=9))
        assert (other.applied, other.version, other.steps) == (False, 2, 5)  # another invocation's: superseded
        assert store.worker_record(job, 0) == record(1, "call-a", pushed_steps=2)  # its record untouched
    assert stored(server, jobs[0]) == after_two == [after_two[0], *stored(client, jobs[1])[1:]]


def test_a_sparse_push_moves_at_least_20x_fewer_bytes_than_f32(redis_server):
    """Bytes at the socket (store/meter.py) per push of the 79,510-weight MLP, as a worker pushes (id, record, out)."""
    length, sent, received = 79_510, {}, {}
    with open_store(redis_server.url) as store:
        job, out, rng = new_job(), np.empty(length, np.float32), np.random.default_rng(0)
        store.set_weights(job, np.zeros(length, np.float32), writers=1)
        for name in ("f32", "topk:0.01", "f32", "topk:0.01"):  # each twice: the second after the library is loaded
            codec, residual = push_codec.parse_codec(name), np.zeros(length, np.float32)
            payload = codec.encode(rng.standard_normal(length).astype(np.float32), residual)
            seq = (store.worker_record(job, 0) or {}).get("pushes", 0) + 1
            for returning in (out, None):
                mine, seq = meter.counter(), seq
                tx, rx = mine.sent, mine.received
                store.push_update(job, payload, returning, push_id=PushId(0, seq), record=record(seq, "w"))
                sent[name, returning is None], received[name, returning is None] = mine.sent - tx, mine.received - rx
                seq += 1
    for bare in (False, True):
        assert sent["f32", bare] >= 20 * sent["topk:0.01", bare], (sent, bare)
    assert received["f32", True] >= 20 * received["topk:0.01", True]  # no weights wanted back: a short reply
    assert received["topk:0.01", False] >= 4 * length  # with `out`, the weights as the push left them come back


def test_the_exact_sum_and_exactly_once_contract_on_the_server_path(redis_server):
    """The store contract's compressed-push checks (exact sum by every rule, resends, superseded pushes,
    malformed payloads) hold with the function doing the adding."""
    with open_store(redis_server.url, chunk_floats=CHUNK, timeout_s=5.0) as store:
        before = fcalls(store)
        contract.check_compressed_pushes_keep_the_exact_sum(store)
        contract.check_compressed_push_rejects_bad_payloads(store)
        assert fcalls(store) > before and store._server_add.supported


def test_the_library_is_loaded_again_when_the_server_lost_it(redis_server):
    with open_store(redis_server.url, chunk_floats=CHUNK) as store:
        job = new_job()
        store.set_weights(job, np.zeros(LENGTH, np.float32))
        one = push_codec.Sparse(LENGTH, np.array([3, CHUNK + 1], np.uint32), np.array([1.5, -2.0], np.float32))
        store.push_update(job, one)
        store.client.execute_command("FUNCTION", "FLUSH")  # as after a restart without persistence
        assert store.push_update(job, one).version == 2
        got = store.get_weights(job)[0]
        assert (got[3], got[CHUNK + 1], np.count_nonzero(got)) == (3.0, -4.0, 2)


def test_a_missing_job_or_chunk_is_refused_and_nothing_is_written(redis_server):
    with open_store(redis_server.url, chunk_floats=CHUNK) as store:
        job, one = new_job(), push_codec.Sparse(LENGTH, np.array([5], np.uint32), np.array([1.0], np.float32))
        store.set_weights(job, np.zeros(LENGTH, np.float32), writers=1)
        store._meta[new_job()] = store._meta[job]  # a job whose layout is cached but whose keys are gone
        with pytest.raises(JobNotFound):
            store.push_update(list(store._meta)[-1], one)
        store.client.delete(keys.weights_chunk(job, 2))
        with pytest.raises(StoreError, match=r"weight chunk 2 is missing") as e:
            store.push_update(job, one, push_id=PushId(0, 1), record=record(1, "a"))
        assert job in str(e.value) and store.url in str(e.value)
        assert store.client.get(keys.weights_version(job)) == b"0" and store.worker_record(job, 0) is None
        assert np.frombuffer(store.client.get(keys.weights_chunk(job, 0)), "<f4")[5] == 0.0


class LoseExecReply:
    """Drops the connection as the reply of the next MULTI/EXEC arrives: the server has applied the push."""

    def __init__(self, monkeypatch, store):
        self.armed, self.lost = 1, 0
        connection_class = store.client.connection_pool.connection_class
        original = connection_class.read_response

        def read_response(connection, *args, **kwargs):
            reply = original(connection, *args, **kwargs)
            if self.armed and isinstance(reply, list):
                self.armed, self.lost = self.armed - 1, self.lost + 1
                raise redis.ConnectionError("Connection closed by server.")
            return reply

        monkeypatch.setattr(connection_class, "read_response", read_response)


def test_a_push_whose_reply_was_lost_is_applied_once(redis_server, monkeypatch):
    """With a push id the call is resent and found applied (ours); without one it is never resent: the error says
    the outcome is unknown, and the pair was added once."""
    with open_store(redis_server.url, chunk_floats=CHUNK) as store:
        job, one = new_job(), push_codec.Sparse(LENGTH, np.array([5], np.uint32), np.array([1.0], np.float32))
        store.set_weights(job, np.zeros(LENGTH, np.float32), writers=1)
        store.push_update(job, one)  # the library loaded, the connection open
        lose = LoseExecReply(monkeypatch, store)
        out = np.zeros(LENGTH, np.float32)
        push = store.push_update(job, one, out, push_id=PushId(0, 1), record=record(1, "a"))
        assert lose.lost == 1 and (push.applied, push.version) == (True, 2) and out[5] == 2.0
        lose.armed = 1
        with pytest.raises(StoreUnavailable, match="may or may not have been applied") as e:
            store.push_update(job, one)
        assert "a push id makes a resend safe" in str(e.value) and lose.lost == 2
        got, version = store.get_weights(job)
        assert (got[5], version, np.count_nonzero(got)) == (3.0, 3, 1)

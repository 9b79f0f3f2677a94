"""The error-feedback residual outlives a call (downpour/residual.py), kept once per call at its clean end: a hand-off,
per-iteration's next epoch and a lease handover start from exactly the residual the call before held, so no mass is
lost or counted twice; a call that dies mid-call is re-invoked from zeros, dropping exactly the residual right after
its last applied push, never counting it twice. In process, on the memory store."""

import uuid

import numpy as np
import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.errors import StateLost
from faasgd.functions.workloads import run_iteration, run_loop_call, run_worker
from faasgd.worker.invocation import Call
from faasgd.worker import invocation
from faasgd.worker.budget import CallBudget, Superseded
from faasgd.downpour import residual as feedback
from faasgd.downpour.worker import load_worker
from faasgd.store import keys, open_store, push_codec
from faasgd.store.push_codec import PushCodec, parse_codec

CODEC = "topk:0.01"


def config_for(**overrides):
    # blocking: in the background a local copy holds the steps of a push in flight (and so what the codec held
    # back) until its result is taken in, which a resumed call's first fetch does at once: another trajectory
    values = {"dataset": "synthetic", "train_samples": 1200, "test_samples": 200, "hidden_sizes": [16],
              "batch_size": 40, "update_rule": "sum", "number_of_workers": 1, "n_fetch": 1, "n_push": 3,
              "max_epochs": 3, "target_accuracy": 1.0, "store_url": f"memory://res{uuid.uuid4().hex[:8]}",
              "lease_s": 5, "push_codec": CODEC, "communication": "blocking"}
    return load_config({}, {**values, **overrides})


def new_job(**overrides):
    config = config_for(**overrides)
    store = open_store(config.store_url)
    return config, store, job.create_job(store, config)


def final_residual(store, job_id, length):
    """The residual the worker's stored record names (zeros when it names none)."""
    name = store.worker_record(job_id, 0).get("residual")
    data = store.get_blob(job_id, name) if name else None
    return np.zeros(length, np.float32) if data is None else np.frombuffer(data, "<f4").copy()


def residual_blobs(store):
    """Names of the residual blobs in a memory store."""
    return [k.split(":b:", 1)[1][:-len(":meta")] for k in list(store.client._values)
            if ":b:residual:" in k and k.endswith(":meta")]


def count_residual_writes(store):
    """Wrap the store's put_blob: the list it returns grows by one name per residual blob written."""
    written, put = [], store.put_blob

    def counting(job_id, name, *args, **kwargs):
        if name.startswith("residual:"):
            written.append(name)
        return put(job_id, name, *args, **kwargs)

    store.put_blob = counting
    return written


class Ledger:
    """Every update a push hands over (before error feedback), the residual right after it and every applied
    push, by push number (the last applied attempt of each: a push made again after a kill replaces none)."""

    def __init__(self, store, monkeypatch):
        self.updates, self.applied, self.after, self.encoded = {}, {}, {}, []
        encode, push = PushCodec.encode, store.push_update

        def spy_encode(codec, update, residual):
            before = update.copy()
            payload = encode(codec, update, residual)
            self.encoded.append((before, residual.copy()))
            return payload

        def spy_push(job_id, delta, *args, push_id=None, **kwargs):
            outcome = push(job_id, delta, *args, push_id=push_id, **kwargs)
            if outcome.applied and push_id.seq not in self.applied:
                self.applied[push_id.seq] = push_codec.as_delta(delta, self.encoded[-1][0].size)
                self.updates[push_id.seq], self.after[push_id.seq] = self.encoded[-1]
            return outcome

        monkeypatch.setattr(PushCodec, "encode", spy_encode)
        store.push_update = spy_push

    def check_chain(self, final, restarts=()):
        """The applied pushes and `final` residual are bit for bit those of one error-feedback chain over the
        updates the applied pushes handed over, restarted from zeros before each push in `restarts` (a call
        resumed after one that died mid-call). Returns the residuals dropped there; sum of updates = sum of
        applied pushes + final + dropped."""
        seqs = sorted(self.applied)
        assert seqs == list(range(1, len(seqs) + 1))
        residual, codec, dropped = np.zeros_like(final), parse_codec(CODEC), []
        for seq in seqs:
            if seq in restarts:
                dropped.append(residual)
                residual = np.zeros_like(final)
            sent = push_codec.as_delta(codec.encode(self.updates[seq].copy(), residual), final.size)
            np.testing.assert_array_equal(sent, self.applied[seq], err_msg=f"push {seq}")
        np.testing.assert_array_equal(final, residual)
        assert np.count_nonzero(final) > 0  # something was held back at the end: the check is not vacuous
        total = np.sum([self.updates[s] for s in seqs], axis=0, dtype=np.float64)
        carried = np.sum([self.applied[s] for s in seqs] + [final] + dropped, axis=0, dtype=np.float64)
        np.testing.assert_allclose(carried, total, rtol=0, atol=1e-5)  # (float32 rounding of update + residual)
        return dropped


def uninterrupted(**overrides):
    config, store, job_id = new_job(**overrides)
    run_worker(Call(config, store, job_id, 0))
    weights = store.get_weights(job_id)[0]
    return weights, final_residual(store, job_id, weights.size)


def dyadic(length, seed):
    """Multiples of 2**-10 below 64 in magnitude: every float32 sum of a dozen of them is exact."""
    return (np.random.default_rng(seed).integers(-65536, 65536, length) / 1024.0).astype(np.float32)


def test_a_handed_off_worker_loses_no_mass_bit_for_bit_across_three_calls(monkeypatch):
    """Three calls of one worker, four pushes each, each ending cleanly, of updates chosen so that float32 sums
    are exact: sum of all applied pushes + the final residual = sum of all updates, bit for bit; one residual
    blob written per call, not per push, and one kept per worker."""
    config, store, job_id = new_job()
    ledger, written = Ledger(store, monkeypatch), count_residual_writes(store)
    length = store.get_weights(job_id)[0].size
    total = np.zeros(length, np.float32)
    for call in range(3):  # each a new call resumed from the record, as after a hand-off
        progress = invocation.resume(Call(config, store, job_id, 0, f"call-{call}"))
        trainer = load_worker(config, store, job_id, progress)
        for push in range(4):
            update = dyadic(length, seed=10 * call + push)
            trainer.exchange.base[:], trainer.exchange.weights[:] = 0.0, update  # the steps not pushed yet: weights - base
            trainer.exchange.unpushed_steps, progress.step = 1, progress.step + 1
            trainer.exchange.push()
            total += update
            assert store.worker_record(job_id, 0)["residual"] == ""  # a push during the call names none
        trainer.end_call()
        trainer.comms.close()
    record = store.worker_record(job_id, 0)
    assert record["pushes"] == 12 == len(ledger.applied) and record["invocations"] == 3
    assert record["residual_resets"] == 0 and len(written) == 3
    final = final_residual(store, job_id, length)
    pushed = np.zeros(length, np.float32)
    for seq in sorted(ledger.applied):
        pushed += ledger.applied[seq]
    np.testing.assert_array_equal(pushed + final, total)
    assert np.count_nonzero(final) > 0
    assert residual_blobs(store) == [record["residual"]]  # one residual kept per worker, not one per call


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
def test_hand_offs_and_epochs_carry_the_residual(mode, monkeypatch):
    """A worker cut into calls (hand-offs; per-iteration: also one call per epoch) pushes exactly what an
    uninterrupted run pushes: the same weights and final residual, bit for bit, and one unbroken chain; each
    call writes the residual once, at its end."""
    expected, expected_residual = uninterrupted(invocation_mode=mode)
    config, store, job_id = new_job(invocation_mode=mode)
    ledger, written = Ledger(store, monkeypatch), count_residual_writes(store)
    calls, iteration = 0, 0
    while iteration is not None:  # each call stops after 10 more pushes; the chained call resumes it
        budget = CallBudget(draining=lambda: store.get_weights(job_id)[1] >= 10 * (calls + 1))
        if mode == "loop":
            answer = run_loop_call(Call(config, store, job_id, 0, f"call-{calls}", loader=load_shard, budget=budget, chain=lambda i: None))
        else:
            answer = run_iteration(Call(config, store, job_id, 0, f"call-{calls}", iteration=iteration, loader=load_shard, budget=budget, chain=lambda i: None))
        calls, iteration = calls + 1, answer["next_iteration"]
        assert not answer["duplicate"]
    record = store.worker_record(job_id, 0)
    assert calls >= 3 and record["state"] == "finished" and record["residual_resets"] == 0
    assert len(written) == calls < record["pushes"]  # once per call, not per push
    final = final_residual(store, job_id, expected.size)
    np.testing.assert_array_equal(store.get_weights(job_id)[0], expected)
    np.testing.assert_array_equal(final, expected_residual)
    ledger.check_chain(final)
    assert residual_blobs(store) == [record["residual"]]


class Killed(Exception):
    """The call's process dies here (SIGKILL): nothing after it runs, not even the worker's end."""


@pytest.mark.parametrize("before", ["nothing", "a hand-off"])
def test_a_call_killed_mid_call_is_re_invoked_from_zeros_dropping_exactly_its_residual(before, monkeypatch):
    """The call dies as it sends its 3rd push (after "a hand-off": a call that kept its residual at push 3 came
    first, and its blob goes once the killed call's first push is applied). The re-invoked call starts from
    zeros: what was dropped is exactly the residual right after the killed call's last applied push, and
    sum of updates = sum of applied pushes + final residual + that, nothing counted twice."""
    config, store, job_id = new_job()
    ledger, written = Ledger(store, monkeypatch), count_residual_writes(store)
    first = 0
    if before == "a hand-off":
        answer = run_loop_call(Call(config, store, job_id, 0, "call-first", loader=load_shard, budget=CallBudget(draining=lambda: store.get_weights(job_id)[1] >= 3), chain=lambda i: None))
        first = store.worker_record(job_id, 0)["pushes"]
        assert answer["handed_off"] and first == 3 and len(written) == 1
    real, count = store.push_update, [0]

    def dies_at_the_third(*args, **kwargs):
        count[0] += 1
        if count[0] == 3:
            raise Killed("as it sends its 3rd push")
        return real(*args, **kwargs)

    store.push_update = dies_at_the_third
    call = Call(config, store, job_id, 0, "call-killed", loader=load_shard)
    trainer = invocation.start(call, invocation.resume(call), load_worker)
    with pytest.raises(Killed):
        invocation.train(trainer)
    trainer.comms.close()
    store.push_update = real
    record = store.worker_record(job_id, 0)
    last = first + 2  # the killed call's last applied push
    assert record["pushes"] == last and record["residual"] == "" and record["state"] == "running"
    assert residual_blobs(store) == []  # the hand-off's blob went with the killed call's first applied push
    lost = ledger.after[last].copy()  # the killed call's residual right after it
    assert np.count_nonzero(lost) > 0

    answer = run_loop_call(Call(config, store, job_id, 0, "call-again", loader=load_shard))  # the supervisor's re-invocation
    assert answer["state"] == "finished"
    record = store.worker_record(job_id, 0)
    assert record["residual_resets"] == 1 == store.get_record(job_id, "result")["residual_resets"]
    assert len(written) == (2 if first else 1)  # the clean ends alone; the killed call wrote none
    final = final_residual(store, job_id, store.get_weights(job_id)[0].size)
    dropped = ledger.check_chain(final, restarts={last + 1})
    np.testing.assert_array_equal(dropped[0], lost)
    assert residual_blobs(store) == [record["residual"]]


def test_f32_writes_no_residual(monkeypatch):
    config, store, job_id = new_job(push_codec="f32", max_epochs=1)
    written = []
    monkeypatch.setattr(type(store), "put_blob", lambda *args, **kwargs: written.append(args))
    run_worker(Call(config, store, job_id, 0))
    record = store.worker_record(job_id, 0)
    assert written == [] and record["residual"] == "" and record["residual_resets"] == 0


def test_a_residual_gone_is_superseded_when_another_call_pushed_else_lost_state():
    """A call resumed from a record whose residual another call has since replaced (and deleted) is
    superseded; one whose record still names a residual that is gone has lost state."""
    config, store, job_id = new_job()
    out = np.zeros(4, np.float32)
    store.update_worker(job_id, 0, {"pushes": 3, "owner": "b", "residual": "residual:0:3:b"})
    with pytest.raises(Superseded):
        feedback.load(store, job_id, 0, "residual:0:2:a", out)
    with pytest.raises(StateLost, match="residual"):
        feedback.load(store, job_id, 0, "residual:0:3:b", out)
    store.put_blob(job_id, "residual:0:3:b", np.arange(4, dtype="<f4").tobytes())
    feedback.load(store, job_id, 0, "residual:0:3:b", out)
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("stale_at", ["its next push", "its hand-off"])
def test_a_stale_call_after_a_takeover_adds_nothing_and_leaves_the_winners_residual(stale_at, monkeypatch):
    """A stalls past its lease after 5 pushes; B takes the worker over (from zeros: A kept no residual at push
    5), pushes once and hands off, keeping its residual; A then tries its 6th push (refused) or its own hand-off
    (its record refused, its blob deleted). B's blob stays as B wrote it; C finishes from it: one chain,
    restarted at push 6, dropping exactly A's residual after push 5."""
    config, store, job_id = new_job(max_epochs=2)
    ledger, takeover = Ledger(store, monkeypatch), {}

    def draining():
        if store.get_weights(job_id)[1] >= 5 and not takeover:
            store.delete_record(job_id, "lease:0:loop")  # A's lease expired while it stalled
            takeover["b"] = run_loop_call(Call(config, store, job_id, 0, "call-b", loader=load_shard, budget=CallBudget(draining=lambda: store.get_weights(job_id)[1] >= 6), chain=lambda i: None))
            takeover["blob"] = store.get_blob(job_id, store.worker_record(job_id, 0)["residual"])
            return stale_at == "its hand-off"
        return False

    a = run_loop_call(Call(config, store, job_id, 0, "call-a", loader=load_shard, budget=CallBudget(draining=draining), chain=lambda i: None))
    assert a["duplicate"] and takeover["b"]["handed_off"]
    record = store.worker_record(job_id, 0)
    assert record["pushes"] == 6 and record["residual_resets"] == 1
    assert store.get_blob(job_id, record["residual"]) == takeover["blob"]  # B's, as B wrote it
    assert residual_blobs(store) == [record["residual"]]  # A's refused one deleted, none older kept
    assert run_loop_call(Call(config, store, job_id, 0, "call-c", loader=load_shard))["state"] == "finished"
    final = final_residual(store, job_id, store.get_weights(job_id)[0].size)
    dropped = ledger.check_chain(final, restarts={6})
    np.testing.assert_array_equal(dropped[0], ledger.after[5])


def test_keeping_a_residual_the_store_refuses_deletes_its_blob():
    """At a call's end the blob is written, then the record naming it; a record refused (the store holds more
    pushes) leaves no blob behind."""
    config, store, job_id = new_job()
    store.update_worker(job_id, 0, {"pushes": 4, "owner": "b", "residual": ""})
    for pushes, accepted in ((3, False), (4, True)):
        name = keys.residual_name(0, pushes, "a")
        assert feedback.keep(store, job_id, 0, name, b"\0" * 8, {"pushes": pushes, "owner": "a",
                                                                  "residual": name}) is accepted
        assert (store.get_blob(job_id, name) is not None) == accepted
    assert store.worker_record(job_id, 0)["residual"] == name

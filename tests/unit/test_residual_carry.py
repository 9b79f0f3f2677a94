"""The error-feedback residual outlives a call (sgd/residual.py): a hand-off, per-iteration's next epoch and a
call re-invoked after a kill start from exactly the residual of the last applied push, so no mass is lost
or counted twice across calls. In process, on the memory store."""

import uuid

import numpy as np
import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.errors import StateLost
from faasgd.sgd import UNLIMITED, CallBudget, Superseded, invocation, run_iteration, run_loop_call, run_worker
from faasgd.sgd import residual as feedback
from faasgd.sgd.worker import load_worker
from faasgd.store import open_store, push_codec
from faasgd.store.push import Push
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


class Ledger:
    """Every update a push hands over (before error feedback) and every applied push, by push number."""

    def __init__(self, store, monkeypatch):
        self.updates, self.applied, self.encoded = {}, {}, []
        encode, push = PushCodec.encode, store.push_update

        def spy_encode(codec, update, residual):
            self.encoded.append(update.copy())
            return encode(codec, update, residual)

        def spy_push(job_id, delta, *args, push_id=None, **kwargs):
            outcome = push(job_id, delta, *args, push_id=push_id, **kwargs)
            if outcome.applied and push_id.seq not in self.applied:
                self.applied[push_id.seq] = push_codec.as_delta(delta, self.encoded[-1].size)
                self.updates[push_id.seq] = self.encoded[-1]
            return outcome

        monkeypatch.setattr(PushCodec, "encode", spy_encode)
        store.push_update = spy_push

    def check_one_chain(self, final):
        """The applied pushes and `final` residual are bit for bit those of one uninterrupted error-feedback
        chain over the updates the applied pushes handed over: nothing dropped or added between calls."""
        seqs = sorted(self.applied)
        assert seqs == list(range(1, len(seqs) + 1))
        residual, codec = np.zeros_like(final), parse_codec(CODEC)
        for seq in seqs:
            sent = push_codec.as_delta(codec.encode(self.updates[seq].copy(), residual), final.size)
            np.testing.assert_array_equal(sent, self.applied[seq], err_msg=f"push {seq}")
        np.testing.assert_array_equal(final, residual)
        assert np.count_nonzero(final) > 0  # something was held back at the end: the check is not vacuous
        total = np.sum([self.updates[s] for s in seqs], axis=0, dtype=np.float64)
        carried = np.sum([self.applied[s] for s in seqs], axis=0, dtype=np.float64) + final
        np.testing.assert_allclose(carried, total, rtol=0, atol=1e-5)  # (float32 rounding of update + residual)


def uninterrupted(**overrides):
    config, store, job_id = new_job(**overrides)
    run_worker(config, store, job_id, 0)
    weights = store.get_weights(job_id)[0]
    return weights, final_residual(store, job_id, weights.size)


def dyadic(length, seed):
    """Multiples of 2**-10 below 64 in magnitude: every float32 sum of a dozen of them is exact."""
    return (np.random.default_rng(seed).integers(-65536, 65536, length) / 1024.0).astype(np.float32)


def test_a_handed_off_worker_loses_no_mass_bit_for_bit_across_three_calls(monkeypatch):
    """Three calls of one worker, four pushes each, of updates chosen so that float32 sums are exact:
    sum of all applied pushes + the final residual = sum of all updates, bit for bit."""
    config, store, job_id = new_job()
    ledger = Ledger(store, monkeypatch)
    length = store.get_weights(job_id)[0].size
    total = np.zeros(length, np.float32)
    for call in range(3):  # each a new call resumed from the record, as after a hand-off
        progress = invocation.resume(store, job_id, config, 0, f"call-{call}")
        trainer = load_worker(config, store, job_id, progress)
        for push in range(4):
            update = dyadic(length, seed=10 * call + push)
            trainer.pending[:] = update
            trainer.unpushed_steps, progress.step = 1, progress.step + 1
            trainer.push()
            total += update
        trainer.channel.close()
    record = store.worker_record(job_id, 0)
    assert record["pushes"] == 12 == len(ledger.applied) and record["invocations"] == 3
    final = final_residual(store, job_id, length)
    pushed = np.zeros(length, np.float32)
    for seq in sorted(ledger.applied):
        pushed += ledger.applied[seq]
    np.testing.assert_array_equal(pushed + final, total)
    assert np.count_nonzero(final) > 0
    assert residual_blobs(store) == [record["residual"]]  # one residual kept per worker, not one per push


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
def test_hand_offs_and_epochs_carry_the_residual(mode, monkeypatch):
    """A worker cut into calls (hand-offs; per-iteration: also one call per epoch) pushes exactly what an
    uninterrupted run pushes: the same weights and final residual, bit for bit, and one unbroken chain."""
    expected, expected_residual = uninterrupted(invocation_mode=mode)
    config, store, job_id = new_job(invocation_mode=mode)
    ledger = Ledger(store, monkeypatch)
    calls, iteration = 0, 0
    while iteration is not None:  # each call stops after 10 more pushes; the chained call resumes it
        budget = CallBudget(draining=lambda: store.get_weights(job_id)[1] >= 10 * (calls + 1))
        if mode == "loop":
            answer = run_loop_call(config, store, job_id, 0, f"call-{calls}", load_shard, budget, lambda i: None)
        else:
            answer = run_iteration(config, store, job_id, 0, iteration, f"call-{calls}", load_shard, budget,
                                   lambda i: None)
        calls, iteration = calls + 1, answer["next_iteration"]
        assert not answer["duplicate"]
    assert calls >= 3 and store.worker_record(job_id, 0)["state"] == "finished"
    final = final_residual(store, job_id, expected.size)
    np.testing.assert_array_equal(store.get_weights(job_id)[0], expected)
    np.testing.assert_array_equal(final, expected_residual)
    ledger.check_one_chain(final)


class Killed(Exception):
    """The call's process dies here (SIGKILL): nothing after it runs, not even the worker's end."""


@pytest.mark.parametrize("where", ["residual written, push not sent", "push applied, older residual kept"])
def test_a_call_killed_between_residual_and_push_is_re_invoked_without_losing_or_doubling_mass(where, monkeypatch):
    expected, expected_residual = uninterrupted()
    config, store, job_id = new_job()
    ledger = Ledger(store, monkeypatch)
    name = "push_update" if where.startswith("residual") else "delete_blob"
    real, count = getattr(store, name), [0]

    def dies_at_the_fifth(*args, **kwargs):
        count[0] += 1
        if count[0] == 5:
            raise Killed(where)
        return real(*args, **kwargs)

    setattr(store, name, dies_at_the_fifth)
    progress = invocation.resume(store, job_id, config, 0, "call-killed")
    trainer = invocation.start(config, store, job_id, progress, load_shard, UNLIMITED, None)
    with pytest.raises(Killed):
        invocation.train(trainer)
    trainer.channel.close()
    setattr(store, name, real)
    record = store.worker_record(job_id, 0)
    # the 5th push dies before it is sent; the 5th deletion follows the 6th push (the first had no older residual)
    assert record["pushes"] == (4 if name == "push_update" else 6) and record["state"] == "running"
    assert store.get_blob(job_id, record["residual"]) is not None  # the record names a residual that is there

    answer = run_loop_call(config, store, job_id, 0, "call-again", load_shard)  # the supervisor's re-invocation
    assert answer["state"] == "finished"
    final = final_residual(store, job_id, expected.size)
    np.testing.assert_array_equal(store.get_weights(job_id)[0], expected)
    np.testing.assert_array_equal(final, expected_residual)
    ledger.check_one_chain(final)


def test_f32_writes_no_residual(monkeypatch):
    config, store, job_id = new_job(push_codec="f32", max_epochs=1)
    written = []
    monkeypatch.setattr(type(store), "put_blob", lambda *args, **kwargs: written.append(args))
    run_worker(config, store, job_id, 0)
    assert written == [] and store.worker_record(job_id, 0)["residual"] == ""


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


def test_a_stale_call_superseded_at_its_push_adds_nothing_and_leaves_the_winners_residual(monkeypatch):
    """A stalls past its lease after 5 pushes; B takes the worker over, pushes once and hands off; A's 6th push is
    refused and its residual deleted; C finishes from B's checkpoint: one chain, as if uninterrupted."""
    expected, expected_residual = uninterrupted(max_epochs=2)
    config, store, job_id = new_job(max_epochs=2)
    ledger, takeover = Ledger(store, monkeypatch), {}

    def draining():
        if store.get_weights(job_id)[1] >= 5 and not takeover:
            store.delete_record(job_id, "lease:0:loop")  # A's lease expired while it stalled
            takeover["b"] = run_loop_call(config, store, job_id, 0, "call-b", load_shard,
                                          CallBudget(draining=lambda: store.get_weights(job_id)[1] >= 6), lambda i: None)
        return False

    a = run_loop_call(config, store, job_id, 0, "call-a", load_shard, CallBudget(draining=draining), lambda i: None)
    assert a["duplicate"] and takeover["b"]["handed_off"]
    record = store.worker_record(job_id, 0)
    assert record["pushes"] == 6 and store.get_blob(job_id, record["residual"]) is not None
    assert residual_blobs(store) == [record["residual"]]  # B's alone: A's refused one and the older ones deleted
    assert run_loop_call(config, store, job_id, 0, "call-c", load_shard)["state"] == "finished"
    final = final_residual(store, job_id, expected.size)
    np.testing.assert_array_equal(store.get_weights(job_id)[0], expected)
    np.testing.assert_array_equal(final, expected_residual)
    ledger.check_one_chain(final)


def test_a_refused_push_keeps_its_residual_when_the_record_names_it():
    """An earlier attempt of this push got through, then another invocation took over (which resumed from its
    residual): the refused resend must not delete it. Otherwise the refused push's residual is deleted."""
    config, store, job_id = new_job()
    refused = lambda: Push(version=3, conflicts=0, retries=0, applied=False)  # noqa: E731
    for named in (True, False):
        name = feedback.blob_name(0, 3, f"a{named}")
        store.update_worker(job_id, 0, {"pushes": 3 + (not named), "owner": "b",
                                        "residual": name if named else "residual:0:4:b"})
        feedback.push_with(store, job_id, 0, refused, name, b"\0" * 8, "")
        assert (store.get_blob(job_id, name) is not None) == named

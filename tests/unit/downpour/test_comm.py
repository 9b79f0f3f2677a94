"""Background communication (downpour/comm.py) on deterministic interleavings, and staleness counted in steps.

Workers are driven method by method (fetch, step, push, sync) against the memory store; a
`DeferredStoreThread` holds each submitted store operation until the test (or the worker's next
synchronisation point) runs it, so every interleaving of stores operations is chosen, not timed.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from support.comm_drive import (
    HELD,
    ROWS,
    DeferredStoreThread,
    Driven,
    config_for,
    new_job,
    replay,
    same_steps,
)
from support.fake_clock import StepClock

from faasgd import data, job, model
from faasgd.errors import ConfigError, StoreUnavailable
from faasgd.downpour import comm
from faasgd.downpour.worker import DownpourWorker, load_worker
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.worker.budget import Superseded
from faasgd.worker.invocation import resume, start, train
from faasgd.store import open_store


# -- the store thread itself ----------------------------------------------------------------------
def test_blocking_channel_runs_at_submit_and_raises_there():
    comms, calls = comm.StoreThread(background=False), []
    comms.submit(lambda: calls.append(1) or "done")
    assert calls == [1] and comms.collect() == "done" and comms.collect() is None
    with pytest.raises(ValueError):
        comms.submit(lambda: int("x"))
    assert not comms.busy


def test_background_channel_runs_on_its_own_thread_one_at_a_time_and_raises_at_collect():
    comms, release = comm.StoreThread(background=True), threading.Event()
    assert comms.thread_ids == [] and comm.StoreThread(background=False).thread_ids == []  # started lazily
    comms.submit(lambda: release.wait(5) and threading.current_thread().ident)
    (ident,) = comms.thread_ids
    with pytest.raises(RuntimeError):
        comms.submit(lambda: None)  # at most one in flight
    release.set()
    assert comms.collect() == ident != threading.get_ident()  # the profile counts this thread as the worker's
    comms.submit(lambda: int("x"))
    with pytest.raises(ValueError):
        comms.collect()
    assert comms.take_wait() >= 0.0 and comms.take_wait() == 0.0
    comms.close()


def test_communication_key_is_checked():
    assert config_for().communication == "background"
    with pytest.raises(ConfigError) as bad:
        config_for(communication="sometimes")
    assert bad.value.field == "communication" and "background, coalesce, blocking" in str(bad.value)


# -- the exact-sum invariant on chosen interleavings ------------------------------------------
@pytest.mark.parametrize("workers, seed, rule", [(2, 0, "sum"), (2, 1, "average"), (3, 2, "sum"), (3, 3, "average"),
                                                 (3, 4, "adagrad")])
def test_background_keeps_version_the_sum_of_pushes_and_params_init_plus_applied_updates(workers, seed, rule):
    config = config_for(number_of_workers=workers, n_fetch=2, n_push=3, update_rule=rule)
    store, job_id, init = new_job(config)
    driven = [Driven(config, store, job_id, w, DeferredStoreThread()) for w in range(workers)]
    rng = np.random.default_rng(seed)
    for d in driven:
        d.trainer.fetch()  # the first fetch of each waits
    for _ in range(120):  # each turn: one worker's next minibatch (with its fetch/push points), or an op lands
        d = driven[rng.integers(workers)]
        t = d.trainer
        if rng.random() < 0.3 and t.comms.waiting:
            t.comms.run()
            continue
        if t.progress.step % config.n_fetch == 0:
            t.fetch()
        d.steps(1)
        if t.progress.step % config.n_push == 0:
            d.push()
    for d in driven:
        d.push()
        d.trainer.exchange.sync()
    weights, version = store.get_weights(job_id)
    records = [d.trainer.progress for d in driven]
    assert version == sum(p.pushes for p in records) == len(store.applied)
    np.testing.assert_array_equal(weights, replay(config, init, store.applied))
    for w, d in enumerate(driven):  # each applied update is exactly the worker's steps handed over with it
        own = [delta for push_id, delta in (store.applied[v] for v in sorted(store.applied)) if push_id.worker == w]
        assert len(own) == len(d.pushed) and all(np.array_equal(a, b) for a, b in zip(own, d.pushed))
        assert all(same_steps(a, b) for a, b in zip(d.pushed, d.stepped))
        assert d.trainer.progress.downpour.pushed_steps == d.trainer.progress.step
    assert store.fetch(job_id).steps == sum(p.step for p in records)


def test_a_background_worker_steps_on_the_result_taken_in_plus_its_own_later_steps():
    config = config_for(n_fetch=1, n_push=2)
    store, job_id, init = new_job(config)
    d = Driven(config, store, job_id, 0, DeferredStoreThread())
    t = d.trainer
    t.fetch()
    d.steps(2)
    d.push()  # handed over; training goes on from the local copy
    assert t.comms.busy and not t.exchange.pending.any()
    t.fetch()  # the push in flight serves as this fetch
    d.steps(1)
    assert t.progress.pushes == 0  # not taken in yet: the steps ran on the local copy
    d.steps(1)
    d.push()  # the first push lands here and is taken in: its weights + the steps after the hand-over
    pushed_result = init + d.pushed[0]
    assert t.progress.pushes == 1
    np.testing.assert_array_equal(t.exchange.fetched, pushed_result)
    np.testing.assert_array_equal(t.exchange.weights, pushed_result + d.pushed[1])
    t.exchange.sync()
    np.testing.assert_array_equal(store.get_weights(job_id)[0], pushed_result + d.pushed[1])


# -- kill and resume ---------------------------------------------------------------------------
ORIGINAL_STEP = DownpourWorker.step


class Killed(Exception):
    """The process died here."""


def rows_log(monkeypatch, kill_at=None):
    """Record each minibatch's labels as trained; raise Killed at the `kill_at`-th step."""
    log = []
    real = ORIGINAL_STEP

    def step(self, x, y):
        if kill_at is not None and len(log) == kill_at:
            raise Killed
        log.append(y.tobytes())
        return real(self, x, y)

    monkeypatch.setattr(DownpourWorker, "step", step)
    return log


@pytest.mark.parametrize("in_flight", ["landed", "lost"])
def test_a_killed_background_worker_resumed_from_its_record_trains_exactly_the_missing_steps(monkeypatch, in_flight):
    config = config_for(n_fetch=2, n_push=3, max_epochs=2)
    plain = open_store(config.store_url.replace("comm", "plain"))
    plain_job = job.create_job(plain, config)
    expected = rows_log(monkeypatch)
    run_worker(Call(config, plain, plain_job, 0))

    store, job_id, init = new_job(config)
    trained = rows_log(monkeypatch, kill_at=39)  # right after the push of step 39 was handed over
    call = Call(config, store, job_id, 0, "call-a")
    trainer = start(call, resume(call), load_worker)
    if in_flight == "lost":
        trainer.comms.close()
        trainer.exchange.comms = DeferredStoreThread()  # its push in flight never reaches the store
    with pytest.raises(Killed):
        train(trainer)
    trainer.comms.close()  # "landed": the push already sent completes
    record = store.worker_record(job_id, 0)
    assert record["step"] == record["pushed_steps"] == (39 if in_flight == "landed" else 36)
    resumed = rows_log(monkeypatch)
    final = run_worker(Call(config, store, job_id, 0, "call-b"))
    assert trained[:record["step"]] + resumed == expected  # the same minibatches, each applied once
    weights, version = store.get_weights(job_id)
    assert version == final["pushes"] == len(store.applied)
    np.testing.assert_array_equal(weights, replay(config, init, store.applied))
    assert final["samples"] == 2 * (ROWS - HELD) and final["step"] == final["pushed_steps"] == len(expected)


# -- errors from the background thread ----------------------------------------------------------
def test_a_superseded_background_push_is_raised_in_the_training_thread_at_the_next_sync():
    config = config_for()
    store, job_id, _ = new_job(config)
    d = Driven(config, store, job_id, 0)
    d.trainer.fetch()
    d.steps(1)
    store.put_record(job_id, "progress:0", {"pushes": 5, "owner": "another-call", "state": "running"})
    d.push()  # returns: the push runs in the background
    with pytest.raises(Superseded):
        d.trainer.exchange.sync()
    d.trainer.comms.close()


def test_retries_in_the_background_thread_are_counted(monkeypatch):
    clock = StepClock(0.0)
    monkeypatch.setattr(DownpourWorker, "clock", staticmethod(clock))
    monkeypatch.setattr(DownpourWorker, "sleep", staticmethod(clock.sleep))
    config = config_for()
    store, job_id, _ = new_job(config)
    d = Driven(config, store, job_id, 0)
    d.trainer.fetch()
    d.steps(1)
    failures = {"left": 2, "threads": set()}
    real = store.inner.push_update

    def flaky(*args, **kwargs):
        failures["threads"].add(threading.current_thread().name)
        if failures["left"]:
            failures["left"] -= 1
            raise StoreUnavailable(store.url, "connection refused")
        return real(*args, **kwargs)

    monkeypatch.setattr(store.inner, "push_update", flaky)
    d.push()
    d.trainer.exchange.sync()
    assert d.trainer.progress.retries == 2 and d.trainer.progress.pushes == 1
    assert all(name.startswith("faasgd-comm") for name in failures["threads"])
    d.trainer.comms.close()


# -- blocking is the old behaviour; both modes end alike for one worker --------------------------
def plain_downpour(config, epochs):
    """The blocking schedule for one worker, spelled out: float32 global adds; the local copy is the parameters it
    was built on (`base`) plus its own steps, a push hands over weights - base, a fetch takes (weights - base) +
    global; each step's gradient comes out times -learning_rate."""
    sizes = job.network_sizes(config)
    glob = model.init_params(sizes, np.random.default_rng(config.seed), config.activation)
    shard = data.load_shard(config.dataset, "train", 0, 1, limit=config.train_samples, holdout=job.holdout(config)[1])
    rng = np.random.default_rng(config.seed)
    weights, base, step = np.zeros_like(glob), np.zeros_like(glob), 0

    def push(weights, base, glob):
        return glob + (weights - base), weights.copy()

    for _ in range(epochs):
        order = rng.permutation(len(shard.y))
        for first in range(0, len(order), config.batch_size):
            if step % config.n_fetch == 0:
                weights, base = (weights - base) + glob, glob.copy()
            rows = order[first:first + config.batch_size]
            _, update = model.loss_and_grads(weights, sizes, shard.x[rows], shard.y[rows], config.activation,
                                             config.dropout, rng, model.GradOut(np.empty_like(weights), -config.learning_rate))
            weights, step = weights + update, step + 1
            if step % config.n_push == 0:
                glob, base = push(weights, base, glob)
        if step % config.n_push:
            glob, base = push(weights, base, glob)
        weights, base = (weights - base) + glob, glob.copy()  # the epoch's end fetches the global parameters
    return glob


@pytest.mark.parametrize("n_fetch, n_push", [(1, 1), (3, 5), (4, 2)])
def test_blocking_mode_reproduces_the_blocking_schedule_bit_for_bit(n_fetch, n_push):
    config = config_for(n_fetch=n_fetch, n_push=n_push, communication="blocking")
    store, job_id, _ = new_job(config)
    final = run_worker(Call(config, store, job_id, 0))
    np.testing.assert_array_equal(store.get_weights(job_id)[0], plain_downpour(config, final["epoch"]))
    assert final["comm_wait_s"] > 0.0


# -- staleness in steps -------------------------------------------------------------------------
def test_staleness_counts_other_workers_steps_since_the_oldest_step_of_each_push():
    config = config_for(number_of_workers=2, n_fetch=1, n_push=1)
    store, job_id, _ = new_job(config)
    a = Driven(config, store, job_id, 0, comm.StoreThread(background=False))  # A's pushes land at once
    b = Driven(config, store, job_id, 1, DeferredStoreThread())
    tb = b.trainer

    def a_pushes(times):  # A pushes 3 steps at a time
        for _ in range(times):
            a.trainer.fetch()
            a.steps(3)
            a.push()

    tb.fetch()  # B's parameters hold no steps of A
    b.steps(2)
    a_pushes(2)  # B is now 2 of A's pushes (6 steps) stale
    b.push()
    tb.exchange.sync()
    assert tb.progress.downpour.last_staleness == 6  # counted from B's oldest step: 6, not 2 pushes, not 0

    tb.fetch()  # B's push result serves: it holds A's 6 steps
    b.steps(1)  # the oldest step of B's next push: computed from parameters with 6 of A's steps
    tb.fetch()  # submitted, reaches the store only after A's next push
    b.steps(1)
    a_pushes(1)
    tb.comms.run()  # the fetch reads 9 of A's steps; B takes it in at its next push
    a_pushes(1)
    b.push()
    tb.exchange.sync()
    assert tb.progress.downpour.last_staleness == 12 - 6

    b.steps(1)  # computed from the fetch taken in (9 of A's steps)
    b.push()
    tb.exchange.sync()
    assert tb.progress.downpour.last_staleness == 12 - 9
    assert tb.progress.downpour.staleness_hist == {6: 2, 3: 1}
    assert a.trainer.progress.downpour.staleness_hist == {2: 1, 0: 3}  # B's 2 steps landed between A's 2nd and 3rd push


def test_each_call_ends_its_communication_thread(monkeypatch):
    from faasgd.functions.workloads import run_iteration
    from faasgd.worker import invocation

    trainers, real_start = [], invocation.start
    monkeypatch.setattr(invocation, "start", lambda *a, **k: trainers.append(real_start(*a, **k)) or trainers[-1])
    config = config_for(invocation_mode="per-iteration", max_epochs=3)
    store, job_id, _ = new_job(config)
    answer = run_iteration(Call(config, store, job_id, 0, "call-0", iteration=0, loader=data.load_shard))
    assert answer["next_iteration"] == 1  # one epoch trained, the worker goes on in the next call
    run_worker(Call(config, store, job_id, 0, "call-1"))
    threads = [thread for t in trainers for thread in t.comms._pool._threads]
    assert len(trainers) == 2 and threads  # each trained in the background
    assert not any(thread.is_alive() for thread in threads)  # ended with its call, though its trainer lives on

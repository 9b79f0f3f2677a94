"""`communication: coalesce`: a push or fetch due while one is in flight never waits; it joins the next.

Driven on chosen interleavings (support/comm_drive.py), the exact-sum invariant holds as for
`background`, and pushes really are put off; one worker on a slow store still trains plain SGD.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from support.comm_drive import DeferredStoreThread, Driven, config_for, new_job, replay, same_steps


@pytest.mark.parametrize("workers, seed, rule", [(2, 0, "sum"), (3, 1, "average"), (2, 2, "adagrad")])
def test_coalesced_pushes_keep_the_exact_sum_and_hand_over_every_step(workers, seed, rule):
    config = config_for(number_of_workers=workers, n_fetch=1, n_push=1, update_rule=rule, communication="coalesce")
    store, job_id, init = new_job(config)
    driven = [Driven(config, store, job_id, w, DeferredStoreThread()) for w in range(workers)]
    rng = np.random.default_rng(seed)
    for d in driven:
        d.trainer.fetch()  # the first fetch of each waits
    for _ in range(150):  # a worker's next minibatch with its fetch and push points, or its operation lands
        d = driven[rng.integers(workers)]
        t = d.trainer
        if rng.random() < 0.25 and t.comms.waiting:
            t.comms.run()
            continue
        t.fetch()
        d.steps(1)
        d.push(due=True)
    for d in driven:
        d.push()  # a drain: never put off
        d.trainer.exchange.sync()
    weights, version = store.get_weights(job_id)
    progress = [d.trainer.progress for d in driven]
    steps = sum(p.step for p in progress)
    assert version == sum(p.pushes for p in progress) == len(store.applied)
    assert version < steps  # pushes were coalesced: fewer than one per step at n_push = 1
    np.testing.assert_array_equal(weights, replay(config, init, store.applied))
    for w, d in enumerate(driven):  # each applied update is exactly the steps handed over with it
        own = [delta for push_id, delta in (store.applied[v] for v in sorted(store.applied)) if push_id.worker == w]
        assert len(own) == len(d.pushed) and all(np.array_equal(a, b) for a, b in zip(own, d.pushed))
        assert all(same_steps(a, b) for a, b in zip(d.pushed, d.stepped))
        assert d.trainer.progress.downpour.pushed_steps == d.trainer.progress.step
    assert store.fetch(job_id).steps == steps


def test_a_fetch_point_while_a_push_is_put_off_is_served_by_that_push():
    config = config_for(n_fetch=1, n_push=1, communication="coalesce")
    store, job_id, init = new_job(config)
    d = Driven(config, store, job_id, 0, DeferredStoreThread())
    t = d.trainer
    t.fetch()
    d.steps(1)
    d.push(due=True)  # submitted, in flight
    t.fetch()  # served by the push in flight: no second operation
    assert t.exchange.op.kind == "push" and t.exchange.op.merge
    d.steps(1)
    d.push(due=True)  # put off: the first push has not reached the store
    assert t.exchange.push_due and t.exchange.unpushed_steps == 1 and len(d.pushed) == 1
    t.comms.run()  # the first push lands (not yet taken in)
    t.fetch()  # a push is due: it will serve this fetch point; nothing is submitted now
    assert not t.comms.waiting and t.exchange.fetch_wanted
    d.steps(1)
    d.push(due=True)  # the put-off push goes with both steps; its result will be taken in
    assert t.progress.pushes == 1 and t.comms.waiting and t.exchange.op.merge and len(d.pushed) == 2
    t.exchange.sync()
    assert t.progress.pushes == 2 and store.get_weights(job_id)[1] == 2
    np.testing.assert_array_equal(t.exchange.weights, replay(config, init, store.applied))


class SlowPushes:
    """A store whose pushes take `delay_s`: the worker steps on meanwhile and coalesces."""

    def __init__(self, inner, delay_s):
        self.inner, self.delay_s = inner, delay_s

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def push_update(self, *args, **kwargs):
        time.sleep(self.delay_s)
        return self.inner.push_update(*args, **kwargs)


def test_one_coalescing_worker_on_a_slow_store_still_trains_plain_sgd():
    from test_worker import plain_sgd  # the single-process oracle

    config = config_for(n_fetch=1, n_push=1, communication="coalesce", max_epochs=2)
    inner, job_id, _ = new_job(config)
    final = run_worker(Call(config, SlowPushes(inner, 0.005), job_id, 0))
    weights, version = inner.get_weights(job_id)
    assert final["state"] == "finished" and version == final["pushes"] < final["step"] / 2
    np.testing.assert_allclose(weights, plain_sgd(config, final["epoch"]), atol=2e-5)


def test_a_landed_result_is_taken_in_before_the_next_step():
    config = config_for(number_of_workers=2, n_fetch=1, n_push=5, communication="coalesce")
    store, job_id, init = new_job(config)
    a, b = (Driven(config, store, job_id, w, DeferredStoreThread()) for w in (0, 1))
    for d in (a, b):
        d.trainer.fetch()
    b.steps(2)
    b.push()
    b.trainer.exchange.sync()  # the store holds b's two steps
    t = a.trainer
    a.steps(1)
    t.fetch()  # submitted; a steps on meanwhile
    t.exchange.take_in_landed()
    assert t.comms.waiting  # still in flight: nothing taken in, no waiting
    a.steps(1)
    t.comms.run()  # lands: read b's steps
    t.exchange.take_in_landed()
    assert t.exchange.op is None
    np.testing.assert_array_equal(t.exchange.weights, init + b.pushed[0] + t.exchange.pending)  # global + a's own two steps

"""Driving Downpour workers method by method on chosen interleavings (tests of downpour/comm.py).

A `DeferredStoreThread` holds each submitted store operation until the test (or the worker's next
synchronisation point) runs it; `RecordingStore` keeps every applied push; `replay` rebuilds the
parameters from them; `Driven` steps and pushes a worker as run_epoch does.
"""

from __future__ import annotations

import uuid

import numpy as np

from faasgd import job
from faasgd.config import load_config
from faasgd.downpour import comm
from faasgd.downpour.schedule import Blocking
from faasgd.worker.progress import WorkerProgress
from faasgd.downpour.worker import load_worker
from faasgd.store import UpdateRule, open_store

ROWS, HELD = 1200, 200  # training rows, of which the last HELD are the validation rows


def config_for(**overrides):
    values = {"dataset": "synthetic", "train_samples": ROWS, "validation_samples": HELD, "test_samples": 200, "hidden_sizes": [16],
              "batch_size": 40, "learning_rate": 0.1, "update_rule": "sum", "number_of_workers": 1, "n_fetch": 1, "n_push": 1,
              "max_epochs": 2, "target_accuracy": 1.0, "store_url": f"memory://comm{uuid.uuid4().hex[:8]}",
              "store_timeout_s": 0.3}
    return load_config({}, {**values, **overrides})


class DeferredStoreThread(comm.StoreThread):
    """A background store thread whose operation runs when the test says (`run`) or when it is collected."""

    def __init__(self):
        super().__init__(background=True)
        self._pool.shutdown()
        self._call = None
        self._done: tuple | None = None

    @property
    def busy(self):
        return self._call is not None or self._done is not None

    def submit(self, call):
        assert not self.busy, "two operations in flight"
        self._call = call

    @property
    def in_flight(self):
        """Submitted and not yet run: collecting it now would wait for the store."""
        return self._call is not None

    @property
    def waiting(self):
        """An operation submitted that has not reached the store yet."""
        return self._call is not None

    def run(self):
        """The operation reaches the store now."""
        call, self._call = self._call, None
        try:
            self._done = (call(), None)
        except Exception as error:  # noqa: BLE001 - kept and raised at collect, as a Future does
            self._done = (None, error)

    def collect(self):
        if self._call is not None:
            self.run()
        if self._done is None:
            return None
        (result, error), self._done = self._done, None
        if error is not None:
            raise error
        return result

    def close(self):
        self._call = self._done = None


class RecordingStore:
    """Delegates to a real store; keeps every applied push's delta, by the version it produced."""

    def __init__(self, inner):
        self.inner, self.applied = inner, {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def push_update(self, job_id, delta, out=None, **push):
        sent = np.array(delta, copy=True)
        result = self.inner.push_update(job_id, delta, out=out, **push)
        if result.applied and result.version not in self.applied:
            self.applied[result.version] = (push["push_id"], sent)
        return result


def replay(config, init, applied):
    """init + every applied update by the job's rule, in the order the store applied them, in float32 as the
    store adds them."""
    rule = UpdateRule(config.update_rule, config.number_of_workers, config.learning_rate)
    state = rule.zero_state(np.array(init, np.float32))
    for version in sorted(applied):
        state = rule.apply(state, applied[version][1])
    return state[:len(init)]


class Driven:
    """One worker driven step by step as run_epoch drives it; remembers each pushed update's own steps."""

    def __init__(self, config, store, job_id, worker_id, comms=None):
        progress = WorkerProgress.fresh(worker_id, config.seed)
        progress.owner = f"call-{worker_id}"
        self.trainer = load_worker(config, store, job_id, progress)
        if comms is not None:
            self.trainer.exchange.comms = comms
            if not comms.background:  # an inline store thread: the blocking schedule takes each operation in at once
                self.trainer.exchange.schedule = Blocking()
        self.order = self.trainer.epoch_order()
        self.grads, self.pushed, self.stepped = [], [], []  # own steps' updates since the last hand-over; updates
        # handed over; the steps each held, summed

    def steps(self, count):
        t, progress, batch = self.trainer, self.trainer.progress, self.trainer.config.batch_size
        for _ in range(count):
            rows = self.order[(progress.step * batch) % len(self.order):][:batch]
            t.step(*t.minibatch(rows))
            self.grads.append(t.grad.copy())
            progress.step += 1

    def push(self, due=False):
        """The worker's push (`due`: at a push point of its schedule, which coalesce may put off). `pushed` keeps what
        it handed over, exactly (its local weights less the parameters they were built on), and `stepped` the same
        steps' updates summed in float32: the two agree up to the rounding of that subtraction and of taking
        parameters in, a few float32 ulps of the weights (`same_steps`), far below one step's update."""
        self.trainer.exchange.push(due=due)
        if self.trainer.exchange.unpushed_steps == 0 and self.grads:  # handed over (not put off)
            summed = np.zeros_like(self.grads[0])
            for grad in self.grads:  # in order
                summed += grad
            self.stepped.append(summed)
            self.pushed.append(self.trainer.exchange.sending.copy())
            self.grads = []


STEP_ROUNDING = 1e-6  # |handed over - steps summed| allowed (Driven.push); one step's update here is ~1e-3 a weight


def same_steps(handed_over, stepped) -> bool:
    """Whether an update handed over holds exactly the steps summed in `stepped` (Driven.push): no step lost or
    counted twice, within STEP_ROUNDING."""
    return handed_over.shape == stepped.shape and bool(np.allclose(handed_over, stepped, rtol=0, atol=STEP_ROUNDING))


def new_job(config):
    store = RecordingStore(open_store(config.store_url))
    job_id = job.create_job(store, config)
    return store, job_id, store.get_weights(job_id)[0]

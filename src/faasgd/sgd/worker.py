"""The Downpour SGD worker: fetch every n_fetch minibatches, step locally, push accumulated updates.

Between fetches the worker applies its own steps to its local copy of the parameters and adds
them to an accumulator; every n_push minibatches it pushes the accumulator (the store adds it
atomically) and clears it. On a fetch the local copy becomes the global parameters plus the
updates not yet pushed, so a worker never drops its own work when n_fetch < n_push.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from faasgd import data, job, model
from faasgd.config import TrainConfig
from faasgd.retry import with_retry
from faasgd.sgd.state import WorkerState
from faasgd.store import ParameterStore

PROGRESS_EVERY_S = 1.0  # how often a worker writes its progress record mid-epoch
DONE_CHECK_EVERY_S = 0.25  # how often (at a fetch) a worker checks whether the job is done
EVAL_CHUNK = 1024  # test rows scaled to float32 at a time during evaluation


class DownpourWorker:
    """One worker's training loop over its shard; `state` holds everything that must survive it."""

    def __init__(self, config: TrainConfig, store: ParameterStore, job_id: str, state: WorkerState,
                 sizes: tuple[int, ...], shard: data.Shard, test: data.Shard):
        self.config, self.store, self.job_id, self.state = config, store, job_id, state
        self.sizes, self.shard, self.test = sizes, shard, test
        size = model.param_count(sizes)
        self.weights = np.empty(size, np.float32)  # local copy: global + own unpushed steps
        self.fetched = np.empty(size, np.float32)  # last global parameters read
        self.pending = np.zeros(size, np.float32)  # accumulated update not yet pushed
        self.grad = np.empty(size, np.float32)
        self.batch_x = np.empty((config.batch_size, shard.x.shape[1]), shard.x.dtype)  # gathered minibatch
        self.batch_y = np.empty(config.batch_size, shard.y.dtype)
        self.base_version = 0  # global version of the last fetch our weights are built on
        self.own_pushes = 0  # our pushes since that fetch (in our weights, counted in the version)
        self.last_push_version = 0  # global version right after our last push
        self.unpushed_steps = 0
        self.pushed_snapshot = False  # `fetched` holds what our push just wrote, and no step came since
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state.rng_state
        self._conflicts_base = (store.conflicts, state.conflicts)  # the client's counter spans invocations
        self._last_progress = 0.0
        self._last_done_check = 0.0
        self.on_progress: Callable[[], None] | None = None  # called at each progress write (lease renewal)

    # -- store round trips, each retried across outages up to the config's deadline ----------
    def _retry(self, call):
        def count(_error):
            self.state.retries += 1
        return with_retry(call, self.config.store_timeout_s, on_retry=count)

    def fetch(self) -> None:
        """Read the global parameters; the local copy becomes global + unpushed updates.

        Right after a push the weights that push wrote are the newest version we can know of
        without asking again, so they serve the fetch (one round trip less per period). A copy
        older than our own last push (a node-local cache not yet refreshed) would undo our own
        applied steps, so it is ignored: reads are monotonic in the version.
        """
        self.state.fetches += 1
        if self.pushed_snapshot:
            version = self.last_push_version
        else:
            _, version = self._retry(lambda: self.store.get_weights(self.job_id, out=self.fetched))
        if version < self.last_push_version:
            return
        self.base_version, self.own_pushes = version, 0
        np.add(self.fetched, self.pending, out=self.weights)

    def push(self) -> None:
        """Send the accumulated update (added atomically by the store) and clear it."""
        if self.unpushed_steps == 0:
            return
        new_version = self._retry(lambda: self.store.push_update(self.job_id, self.pending, out=self.fetched))
        # staleness: updates of other workers applied since the parameters we stepped from
        self.state.record_staleness(new_version - 1 - self.base_version - self.own_pushes)
        self.own_pushes += 1
        self.last_push_version = new_version
        self.pushed_snapshot = True
        self.pending[:] = 0.0
        self.unpushed_steps = 0
        self.state.pushes += 1

    def job_done(self, now: float) -> bool:
        """Whether another worker has reached the target (checked at most every DONE_CHECK_EVERY_S)."""
        if now - self._last_done_check < DONE_CHECK_EVERY_S:
            return False
        self._last_done_check = now
        return self._retry(lambda: job.is_done(self.store, self.job_id))

    def write_progress(self, force: bool = False) -> None:
        now = time.time()
        if not force and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
        self.sync_conflicts()
        record = self.state.progress(now)
        self._retry(lambda: self.store.put_record(self.job_id, job.progress_name(self.state.worker_id), record))
        if self.on_progress is not None:
            self.on_progress()

    # -- training --------------------------------------------------------------------------
    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        loss, grad = model.loss_and_grads(self.weights, self.sizes, x, y, self.config.activation,
                                          self.config.dropout, self.rng, grad_out=self.grad)
        np.multiply(grad, -self.config.learning_rate, out=grad)
        self.weights += grad
        self.pending += grad
        self.unpushed_steps += 1
        self.pushed_snapshot = False
        return float(loss)

    def run_epoch(self) -> bool:
        """One pass over the shard in a fresh order; False if the job was done meanwhile."""
        cfg, state = self.config, self.state
        order = self.rng.permutation(len(self.shard.y))
        batch = cfg.batch_size
        started = time.perf_counter()
        losses = []
        for first in range(0, len(order), batch):
            if state.step % cfg.n_fetch == 0:
                if self.job_done(time.monotonic()):  # unpushed steps are dropped: the job's model is final
                    state.train_s += time.perf_counter() - started
                    return False
                self.fetch()
                self.write_progress()
            rows = order[first:first + batch]
            x, y = self.batch_x[:len(rows)], self.batch_y[:len(rows)]
            np.take(self.shard.x, rows, axis=0, out=x)  # into the reused buffers: no per-step allocation
            np.take(self.shard.y, rows, out=y)
            losses.append(self.step(x, y))
            state.step += 1
            state.samples += len(rows)
            if state.step % cfg.n_push == 0:
                self.push()
        self.push()
        state.train_s += time.perf_counter() - started
        state.loss = float(np.mean(losses)) if losses else None
        state.epoch += 1
        return True

    def evaluate(self, weights: np.ndarray) -> float:
        """Test accuracy of `weights`; the test rows stay raw uint8 and are scaled a chunk at a time."""
        rows, correct = len(self.test.y), 0.0
        for start in range(0, rows, EVAL_CHUNK):
            stop = min(rows, start + EVAL_CHUNK)
            x = data.scale_rows(self.test.x, start, stop)
            correct += (stop - start) * model.accuracy(weights, self.sizes, x, self.test.y[start:stop],
                                                       self.config.activation)
        return correct / rows if rows else 0.0

    def end_of_epoch(self) -> bool:
        """Evaluate the global parameters; mark the job done at the target. True when training should stop.

        After the epoch's last push nothing is pending, so the fetched global parameters are the
        local ones (with a node-local cache older than our last push: the newest we know).
        """
        self.fetch()
        self.state.accuracy = self.evaluate(self.weights)
        self._retry(lambda: self.store.append_event(self.job_id, {
            "event": "epoch", "worker_id": self.state.worker_id, "epoch": self.state.epoch,
            "accuracy": self.state.accuracy, "at": time.time()}))
        reached = self.state.accuracy >= self.config.target_accuracy
        if reached:
            self._retry(lambda: job.mark_done(self.store, self.job_id, self.state.worker_id, self.state.accuracy))
        self.write_progress(force=True)
        return reached or self.state.epoch >= self.config.max_epochs

    def sync_conflicts(self) -> None:
        """Count the conflicts the store client saw since this trainer was built into the state."""
        store_base, state_base = self._conflicts_base
        self.state.conflicts = state_base + self.store.conflicts - store_base

    def save_rng(self) -> None:
        self.state.rng_state = self.rng.bit_generator.state


def load_worker(config: TrainConfig, store: ParameterStore, job_id: str, state: WorkerState,
                sizes: tuple[int, ...], loader: Callable[..., data.Shard] = data.load_shard) -> DownpourWorker:
    """Load only this worker's shard (and the test rows) and build its trainer.

    `loader` is data.load_shard or a caching wrapper of it (a warm function replica keeps shards).
    """
    state.note_replica()
    shard = loader(config.dataset, "train", state.worker_id, config.number_of_workers, config.train_samples)
    test = loader(config.dataset, "test", 0, 1, config.test_samples, scaled=False)
    state.shard_size = len(shard.y)
    return DownpourWorker(config, store, job_id, state, sizes, shard, test)


def run_worker(config: TrainConfig, store: ParameterStore, job_id: str, worker_id: int,
               log: Callable[[str], None] | None = None,
               loader: Callable[..., data.Shard] = data.load_shard,
               on_progress: Callable[[], None] | None = None) -> dict:
    """Train worker `worker_id` of the job to its stop rule (loop mode); returns its final progress.

    A failure (store gone past its deadline, missing data, a bug) is written to the worker's
    progress record when the store allows, counted towards the job's end, and re-raised.
    """
    state = WorkerState.fresh(worker_id, config.seed)
    trainer = None
    try:
        trainer = load_worker(config, store, job_id, state, job.network_sizes(config), loader)
        trainer.on_progress = on_progress
        state.started_at = time.time()
        while trainer.run_epoch() and not trainer.end_of_epoch():
            pass
        state.state = "finished"
    except BaseException as error:  # recorded, then re-raised
        state.state, state.error = "failed", f"worker {worker_id}: {error}"
        end_worker(store, job_id, config, state, trainer, log)
        raise
    return end_worker(store, job_id, config, state, trainer, log)


def end_worker(store, job_id, config, state, trainer, log) -> dict:
    """Write the worker's final progress and count it as ended (best effort once the store is gone)."""
    state.finished_at = time.time()
    if trainer is not None:
        trainer.sync_conflicts()
    record = state.progress(state.finished_at)
    # A worker that already gave up on the store tries briefly; one that finished waits out an outage.
    deadline_s = 2.0 if state.state == "failed" else config.store_timeout_s
    try:
        with_retry(lambda: store.put_record(job_id, job.progress_name(state.worker_id), record), deadline_s)
        evaluate = trainer.evaluate if trainer is not None else None
        with_retry(lambda: job.finish_worker(store, job_id, config, evaluate), deadline_s)
    except Exception as error:  # the store is gone: the caller reports it
        if log:
            log(f"worker {state.worker_id}: could not record its end: {error}")
    return record

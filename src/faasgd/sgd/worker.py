"""The Downpour SGD worker: fetch every n_fetch minibatches, step locally, push accumulated updates.

Between fetches the worker applies its own steps to its local copy of the parameters and adds
them to an accumulator; every n_push minibatches it pushes the accumulator (the store adds it
atomically) and clears it. On a fetch the local copy becomes the global parameters plus the
updates not yet pushed, so a worker never drops its own work when n_fetch < n_push.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import numpy as np

from faasgd import data, job, model, result
from faasgd.config import TrainConfig
from faasgd.retry import STORE_OUTAGE, retry_call
from faasgd.sgd.progress import WorkerProgress
from faasgd.store import ParameterStore

log = logging.getLogger("faasgd.worker")  # a replica's log (`faasgd logs emnist-train`) shows these events

PROGRESS_EVERY_S = 1.0  # how often a worker writes its progress record mid-epoch
DONE_CHECK_EVERY_S = 0.25  # how often (at a fetch) a worker checks whether the job is done
EVAL_CHUNK = 1024  # test rows scaled to float32 at a time during evaluation


class DownpourWorker:
    """One worker's training loop over its shard; `progress` holds everything that must survive it."""

    sleep = staticmethod(time.sleep)  # how store retries wait (tests replace both with a fake clock)
    clock = staticmethod(time.monotonic)

    def __init__(self, config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                 sizes: tuple[int, ...], shard: data.Shard, test: data.Shard):
        self.config, self.store, self.job_id, self.progress = config, store, job_id, progress
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
        self.rng.bit_generator.state = progress.rng_state
        self._last_progress = 0.0
        self._last_done_check = 0.0
        self.on_progress: Callable[[], None] | None = None  # called at each progress write (lease renewal)

    # -- store round trips, each retried across outages up to the config's deadline ----------
    def _retry(self, call):
        def count(_error):
            self.progress.retries += 1
        return retry_call(call, STORE_OUTAGE.within(self.config.store_timeout_s), on_retry=count,
                          sleep=self.sleep, clock=self.clock)

    def fetch(self) -> None:
        """Read the global parameters; the local copy becomes global + unpushed updates.

        Right after a push the weights that push wrote are the newest version we can know of
        without asking again, so they serve the fetch (one round trip less per period). A copy
        older than our own last push (a node-local cache not yet refreshed) would undo our own
        applied steps, so it is ignored: reads are monotonic in the version.
        """
        self.progress.fetches += 1
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
        push = self._retry(lambda: self.store.push_update(self.job_id, self.pending, out=self.fetched))
        self.progress.conflicts += push.conflicts  # ours alone: the push reports what it saw
        # staleness: updates of other workers applied since the parameters we stepped from
        self.progress.record_staleness(push.version - 1 - self.base_version - self.own_pushes)
        self.own_pushes += 1
        self.last_push_version = push.version
        self.pushed_snapshot = True
        self.pending[:] = 0.0
        self.unpushed_steps = 0
        self.progress.pushes += 1

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
        record = self.progress.record(now)
        self._retry(lambda: self.store.put_record(self.job_id, job.progress_name(self.progress.worker_id), record))
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
        cfg, progress = self.config, self.progress
        order = self.rng.permutation(len(self.shard.y))
        batch = cfg.batch_size
        started = time.perf_counter()
        losses = []
        for first in range(0, len(order), batch):
            if progress.step % cfg.n_fetch == 0:
                if self.job_done(time.monotonic()):  # unpushed steps are dropped: the job's model is final
                    progress.train_s += time.perf_counter() - started
                    return False
                self.fetch()
                self.write_progress()
            rows = order[first:first + batch]
            x, y = self.batch_x[:len(rows)], self.batch_y[:len(rows)]
            np.take(self.shard.x, rows, axis=0, out=x)  # into the reused buffers: no per-step allocation
            np.take(self.shard.y, rows, out=y)
            losses.append(self.step(x, y))
            progress.step += 1
            progress.samples += len(rows)
            if progress.step % cfg.n_push == 0:
                self.push()
        self.push()
        progress.train_s += time.perf_counter() - started
        progress.loss = float(np.mean(losses)) if losses else None
        progress.epoch += 1
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
        progress = self.progress
        progress.accuracy = self.evaluate(self.weights)
        self._retry(lambda: self.store.append_event(self.job_id, {
            "event": "epoch", "worker_id": progress.worker_id, "epoch": progress.epoch,
            "accuracy": progress.accuracy, "at": time.time()}))
        log.info("job %s worker %d: epoch %d, test accuracy %.4f, loss %.4f, %d pushes, %d conflicts",
                 self.job_id, progress.worker_id, progress.epoch, progress.accuracy, progress.loss or 0.0,
                 progress.pushes, progress.conflicts)
        reached = progress.accuracy >= self.config.target_accuracy
        if reached:
            self._retry(lambda: job.mark_done(self.store, self.job_id, progress.worker_id, progress.accuracy))
        self.write_progress(force=True)
        return reached or progress.epoch >= self.config.max_epochs

    def save_rng(self) -> None:
        self.progress.rng_state = self.rng.bit_generator.state


def load_worker(config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                loader: Callable[..., data.Shard] = data.load_shard) -> DownpourWorker:
    """Load only this worker's shard (and the test rows) and build its trainer.

    `loader` is data.load_shard or a caching wrapper of it (a warm function replica keeps shards).
    """
    progress.note_replica()
    shard = loader(config.dataset, "train", progress.worker_id, config.number_of_workers, config.train_samples)
    test = loader(config.dataset, "test", 0, 1, config.test_samples, scaled=False)
    progress.shard_size = len(shard.y)
    return DownpourWorker(config, store, job_id, progress, job.network_sizes(config), shard, test)


def end_worker(store: ParameterStore, job_id: str, config: TrainConfig, progress: WorkerProgress,
               trainer: DownpourWorker | None) -> dict:
    """Write the worker's final progress and count it as ended (best effort once the store is gone)."""
    progress.finished_at = time.time()
    record = progress.record(progress.finished_at)
    log.log(logging.WARNING if progress.error else logging.INFO, "job %s worker %d: %s after %d samples%s",
            job_id, progress.worker_id, progress.state, progress.samples,
            f": {progress.error}" if progress.error else "")
    # A worker that already gave up on the store tries briefly; one that finished waits out an outage.
    policy = STORE_OUTAGE.within(2.0 if progress.state == "failed" else config.store_timeout_s)
    try:
        retry_call(lambda: store.put_record(job_id, job.progress_name(progress.worker_id), record), policy)
        evaluate = trainer.evaluate if trainer is not None else None
        retry_call(lambda: result.finish_worker(store, job_id, config, evaluate), policy)
    except Exception as error:  # the store is gone: the caller reports the cause
        log.warning("job %s worker %d: could not record its end: %s", job_id, progress.worker_id, error)
    return record

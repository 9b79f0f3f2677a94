"""The Downpour SGD worker: fetch every n_fetch minibatches, step locally, push accumulated updates.

Between fetches the worker applies its own steps to its local copy of the parameters and adds
them to an accumulator; every n_push minibatches it pushes the accumulator (the store adds it
atomically) and clears it. On a fetch the local copy becomes the global parameters plus the
updates not yet pushed, so a worker never drops its own work when n_fetch < n_push.

Each push carries the worker's push number and its record (progress.py), which the store writes
with the add: after any push the record is a checkpoint, and a worker resumed from it (another
invocation, a hand-off, a redelivery) trains exactly the steps that were not yet applied. A push or
record the store refuses (another invocation holds newer ones) ends this invocation: Superseded.

The stop rule is checked every `eval_every_samples` samples of all workers (stop_rule.py), at the parameters
a push returned; epoch ends still evaluate (the curves), and decide only at a worker's last epoch.

Fetches and pushes (exchange.py) go through a StoreThread (comm.py) as the worker's schedule says (schedule.py): in
the background (the default) they overlap the next steps and their results are taken in at the next
synchronisation point (`sync`); blocking, at once; coalesce, never waiting for the one in flight. Either way a
push's record is the snapshot of the worker right after the steps it hands over.

Stragglers (docs/explanation/stragglers.md): a worker slowed on purpose sleeps (slow_factor - 1) x each step's time
after it (worker/straggler.py); with max_staleness, each fetch first waits until the worker is within that many
steps of the slowest (staleness_bound.py).
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import numpy as np

from faasgd import data, job
from faasgd.config import TrainConfig
from faasgd.downpour import comm
from faasgd.downpour import residual as feedback
from faasgd.downpour.exchange import ParameterExchange
from faasgd.downpour.staleness_bound import StalenessBound
from faasgd.downpour.stop_rule import StopRule
from faasgd.job import model_file
from faasgd.model.mlp import GradOut
from faasgd.store import ParameterStore
from faasgd.worker.budget import UNLIMITED, CallBudget, HandOff, Superseded
from faasgd.worker.liveness import Liveness
from faasgd.worker.progress import WorkerProgress
from faasgd.worker.store_calls import StoreCalls
from faasgd.worker.straggler import Slowdown
from faasgd.worker.curve_rows import evaluates_test_rows

log = logging.getLogger("faasgd.worker")  # a replica's log (`faasgd logs emnist-train`) shows these events


class DownpourWorker(Liveness, StoreCalls):
    """One worker's training over its shard; `progress` holds everything that must survive it. It holds its
    exchange with the store (exchange.py: the local copy, fetches and pushes) and its stop rule (stop_rule.py)."""

    def __init__(self, config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                 sizes: tuple[int, ...], shard: data.Shard, test: data.Shard, budget: CallBudget = UNLIMITED):
        self.config, self.store, self.job_id, self.progress = config, store, job_id, progress
        self.sizes, self.shard, self.test, self.budget = sizes, shard, test, budget
        self.net = job.network(config)  # the MLP or the cnn (faasgd.model.network)
        size = self.net.param_count
        self.grad = np.empty(size, np.float32)
        self.step_out = GradOut(self.grad, -config.learning_rate)  # a step's gradient comes out as the update itself
        # the shard stays as stored (raw uint8 pixels: a quarter of float32's memory); a minibatch is
        # gathered into `batch_raw` and scaled into `batch_x` (float32 in [0, 1]) as it is trained
        self.batch_raw = np.empty((config.batch_size, shard.x.shape[1]), shard.x.dtype)
        self.batch_x = np.empty((config.batch_size, shard.x.shape[1]), np.float32)
        self.batch_y = np.empty(config.batch_size, shard.y.dtype)
        self.eval_scratch = model_file.eval_scratch(test)  # evaluation rows scaled a chunk at a time, into one buffer
        self.stop_rule = StopRule(config, shard.total)  # the checks between epoch ends, and whether we crossed
        self.exchange = ParameterExchange(config, size, self)  # fetches and pushes, the local copy, the versions
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = progress.rng_state
        self.eval_s = 0.0  # seconds the last evaluation took
        self.on_heartbeat: Callable[[], None] | None = None  # also called at each heartbeat (lease, supervision)
        self.slowdown = Slowdown.for_worker(config, progress.worker_id, lambda seconds: self.sleep(seconds))
        self.bound = StalenessBound(self)  # max_staleness: waits at fetches for the slowest worker

    # -- what a call sees of the exchange (worker/protocol.py) -------------------------------------
    @property
    def comms(self) -> comm.StoreThread:
        return self.exchange.comms

    @property
    def period_s(self) -> float:
        """Seconds between pushes, smoothed: what the budget must leave room for."""
        return self.exchange.period_s

    @property
    def has_pushed(self) -> bool:
        """A push of this call has landed: from then on it may hand off."""
        return self.exchange.last_push_at is not None

    def fetch(self, wait: bool = False) -> None:
        self.exchange.fetch(wait)

    def check_budget(self, upcoming_s: float) -> None:
        """HandOff when the budget says stop, once the push in flight has landed (its record is the checkpoint)."""
        reason = self.budget.stop_reason(upcoming_s)
        if reason:
            self.end_call()  # syncs first
            raise HandOff(reason)

    def end_call(self) -> None:
        """The call ends cleanly here (a hand-off, an epoch's end in per-iteration mode, the stop rule, the job's
        end): keep the residual with the checkpoint (downpour/residual.py), once its last push has landed.
        Superseded if the store refuses the record (another invocation is further on)."""
        self.exchange.keep_residual()  # syncs first

    def settle(self) -> None:
        """Take in an operation still in flight as the worker ends (after a failure: its error only logged)."""
        try:
            self.exchange.sync()
        except Exception as error:  # the failure being recorded is the one that counts
            log.warning("job %s worker %d: store operation in flight failed: %s", self.job_id,
                        self.progress.worker_id, error)
        self.exchange.comms.close()

    def snapshot(self, pushes: int | None = None) -> dict:
        """The worker's record as of now (the RNG state after the last step), with `pushes` if given."""
        self.progress.rng_state = self.rng.bit_generator.state
        record = self.progress.record()
        if pushes is not None:
            record["pushes"] = pushes
        return record

    def save(self) -> None:
        """Write the record between pushes (an epoch's end, the end); Superseded if the store has newer."""
        self.exchange.sync()
        record = self.snapshot()
        if not self.retry(lambda: self.store.update_worker(self.job_id, self.progress.worker_id, record)):
            raise Superseded(f"worker {self.progress.worker_id}: another invocation wrote a newer record")

    # -- training --------------------------------------------------------------------------
    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        """One minibatch step on the local copy: the gradient comes out times -learning_rate, the update itself."""
        started = time.perf_counter()
        exchange = self.exchange
        loss, update = self.net.loss_and_grads(exchange.weights, x, y, self.rng, self.step_out)
        exchange.weights += update
        spent = time.perf_counter() - started
        self.progress.spend("compute", spent)
        self.slowdown.after(spent, self.progress)  # slowed on purpose (slow_factor, --chaos slow): real time, no CPU
        exchange.stepped()
        return float(loss)

    def minibatch(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shard's `rows` as float32 inputs in [0, 1] and labels, in the reused buffers (no allocation)."""
        started = time.perf_counter()
        raw, x, y = self.batch_raw[:len(rows)], self.batch_x[:len(rows)], self.batch_y[:len(rows)]
        np.take(self.shard.y, rows, out=y)
        if raw.dtype == np.float32:  # a shard loaded already scaled (scaled=True)
            np.take(self.shard.x, rows, axis=0, out=x)
        else:
            np.take(self.shard.x, rows, axis=0, out=raw)
            np.divide(raw, np.float32(255), out=x)  # as data.scale_pixels: the same float32 values
        self.progress.spend("batches", time.perf_counter() - started)
        return x, y

    def epoch_order(self) -> np.ndarray:
        """This epoch's order of rows: drawn now, or redrawn from the state it was drawn from when resuming."""
        progress = self.progress
        if progress.epoch_step == 0:
            progress.epoch_rng_state, progress.epoch_loss_sum = self.rng.bit_generator.state, 0.0
            return self.rng.permutation(len(self.shard.y))
        after = self.rng.bit_generator.state
        self.rng.bit_generator.state = progress.epoch_rng_state
        order = self.rng.permutation(len(self.shard.y))
        self.rng.bit_generator.state = after
        return order

    def run_epoch(self) -> bool:
        """The rest of the current epoch; False if the job ended meanwhile. HandOff at a push when the budget says."""
        cfg, progress, batch, exchange = self.config, self.progress, self.config.batch_size, self.exchange
        order = self.epoch_order()
        started = time.perf_counter()
        for index in range(progress.epoch_step, -(-len(order) // batch)):
            if progress.step % cfg.n_fetch == 0:
                self.bound.wait()  # max_staleness: within that many steps of the slowest (at once when 0)
                if self.stop_rule.crossed or self.job_ended():  # unpushed steps are dropped: the job's model is final
                    exchange.sync()
                    progress.train_s += time.perf_counter() - started
                    return False
                exchange.fetch()
                self.heartbeat()
            rows = order[index * batch:(index + 1) * batch]
            x, y = self.minibatch(rows)
            exchange.schedule.before_step(exchange)
            progress.epoch_loss_sum += self.step(x, y)
            progress.step, progress.samples, progress.epoch_step = progress.step + 1, progress.samples + len(rows), index + 1
            if progress.step % cfg.n_push == 0 or exchange.push_due:
                progress.train_s, started = progress.train_s + time.perf_counter() - started, time.perf_counter()
                exchange.push(due=True)
                self.stop_rule.check_target(self)
                self.check_budget(exchange.period_s + self.eval_s)
        progress.train_s += time.perf_counter() - started
        exchange.push()
        return True

    def evaluate(self, weights: np.ndarray, rows: data.Shard | None = None) -> float:
        """Accuracy of `weights` on the validation rows (or `rows`, e.g. self.test); raw uint8, scaled in chunks."""
        shard = rows if rows is not None else self.validation
        started = time.perf_counter()
        try:
            return model_file.accuracy_on(shard, weights, self.sizes, self.config.activation, self.net, self.eval_scratch)
        finally:
            self.progress.spend("eval", time.perf_counter() - started)

    def end_of_epoch(self) -> bool:
        """Close the epoch: at this worker's round of epoch ends (and at its last epoch) evaluate the global
        parameters on the validation and test rows (the curves); at its last epoch at the target keep exactly them
        as the job's model and mark the job done (job/model_file.py); save the record. True when training should stop."""
        exchange = self.exchange
        exchange.sync()
        self.stop_rule.check_target(self)  # the epoch's last push may have passed a period: its parameters, as any push's
        exchange.fetch(wait=True)  # nothing is pending after the epoch's last push: these are the global parameters
        version, weights = exchange.base_version, exchange.weights
        # Every worker's record is written with each of its pushes, so their samples, read right after the
        # fetch, count the samples of every push in these parameters (and of any push landing in between).
        records = self.retry(lambda: job.read_progress(self.store, self.job_id, self.config.number_of_workers))
        samples = sum(int((r or {}).get("samples", 0)) for r in records.values())
        progress = self.progress
        steps = max(1, progress.epoch_step)
        progress.epoch, progress.epoch_step, progress.epoch_rng_state = progress.epoch + 1, 0, None
        progress.loss, progress.epoch_loss_sum = progress.epoch_loss_sum / steps, 0.0
        last = progress.epoch >= self.config.max_epochs
        # The curves (validation and test), reported only: the stop rule is the checks (check_target), and an
        # epoch's end decides only at a last epoch. One worker a round of epoch ends evaluates both, on the same
        # parameters, and every worker at its last epoch (worker/curve_rows.py); the others' epoch events carry null
        # and their records keep the accuracy of the last epoch they evaluated (`accuracy_epoch`).
        accuracy = test_accuracy = None
        if evaluates_test_rows(progress.epoch, progress.worker_id, self.config.number_of_workers, last):
            started = self.clock()
            accuracy = self.evaluate(weights)
            test_accuracy = self.evaluate(weights, self.test)
            progress.accuracy, progress.accuracy_epoch = accuracy, progress.epoch
            self.eval_s = self.clock() - started  # kept from the last that evaluated (the budget's room for one)
        now = progress.now()  # on the job's timeline (worker/call_clock.py)
        self.retry(lambda: self.store.append_event(self.job_id, {
            "event": "epoch", "worker_id": progress.worker_id, "epoch": progress.epoch,
            "accuracy": accuracy, "test_accuracy": test_accuracy, "at": now}))
        log.info("job %s worker %d: epoch %d, validation accuracy %s, loss %.4f, %d pushes, %d conflicts",
                 self.job_id, progress.worker_id, progress.epoch,
                 "(another worker's round)" if accuracy is None else f"{accuracy:.4f}", progress.loss,
                 progress.pushes, progress.downpour.conflicts)
        # the stop rule is the period's checks (check_target), the same for 1 and W workers; an epoch's end decides
        # only at the worker's last epoch (always evaluated), so a job never ends at its target unclaimed
        reached = last and accuracy >= self.config.target_accuracy
        if reached:
            kept, crossing = weights.copy(), {
                "validation_accuracy": accuracy, "at": now, "samples": samples,
                "epochs": samples / self.shard.total, "version": version}
            self.retry(lambda: model_file.keep_crossing(self.store, self.job_id, progress.worker_id, kept,
                                                        lambda: test_accuracy, crossing))  # a last epoch's: evaluated
        self.save()
        self.heartbeat(force=True)
        return last or self.stop_rule.crossed


def load_worker(config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                loader: Callable[..., data.Shard] = data.load_shard, budget: CallBudget = UNLIMITED) -> DownpourWorker:
    """Load only this worker's shard (and the validation and test rows, raw) and build its trainer.

    The validation rows are held out of the training split (data/shard.py): no worker trains on them.
    `loader` is data.load_shard or a caching wrapper of it (a warm function replica keeps shards).
    """
    progress.note_replica()
    started = time.perf_counter()
    _, held = job.holdout(config)
    shard = loader(config.dataset, "train", progress.worker_id, config.number_of_workers, config.train_samples,
                   scaled=False, holdout=held)  # raw uint8, scaled per minibatch (DownpourWorker.minibatch)
    validation = loader(config.dataset, "validation", 0, 1, config.train_samples, scaled=False, holdout=held)
    test = loader(config.dataset, "test", 0, 1, config.test_samples, scaled=False)
    progress.shard_size = len(shard.y)
    progress.spend("load", time.perf_counter() - started)
    trainer = DownpourWorker(config, store, job_id, progress, job.network_sizes(config), shard, test, budget)
    trainer.validation = validation  # the stop rule's rows
    exchange = trainer.exchange
    if exchange.residual is not None and progress.downpour.residual:  # what the last call held back at its clean end
        trainer.retry(lambda: feedback.load(store, job_id, progress.worker_id, progress.downpour.residual, exchange.residual))
    elif exchange.residual is not None and progress.pushes:  # the call that pushed last died mid-call: from zeros
        progress.downpour.residual_resets += 1
        exchange.residual_kept = False
        log.warning("job %s worker %d: no residual kept after push %d (its call ended uncleanly): starting from zeros",
                    job_id, progress.worker_id, progress.pushes)
    return trainer

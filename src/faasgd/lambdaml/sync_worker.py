"""The synchronous worker: LambdaML's grad_avg, model_avg and admm as rounds through faasgd.lambdaml.rounds.Exchange.

It is driven by the same invocation machinery as the Downpour worker (invocation.py: leases, resume from
the worker record, hand-off, per-iteration chaining, supervision, the job's end); load_worker picks it by
the job's `algorithm`. Every round goes through one all_reduce over the job's channel: the job's store
(ParameterStore is a blob space), the function's S3 space (`channel: s3`) or DynamoDB tables (`channel: dynamodb`).

Rounds and epochs. Every worker runs the same rounds: in each, every worker takes `steps_per_round` minibatches of
exactly B = min(batch_size, L) rows (grad_avg and admm: 1, admm taking local_steps x-update steps on it; model_avg:
local_steps, one SGD step each), L the largest shard's rows. An epoch is rounds_per_epoch = ceil(ceil(L / B) /
steps_per_round) rounds, so every worker passes over its shard once per epoch and a shorter shard wraps to its epoch
order's start (decided: equal minibatches keep grad_avg equal to one process with an N x batch_size batch).
Minibatch k of epoch e is rows order_e[(k B + j) mod n], j < B, order_e a permutation drawn from (seed, worker,
epoch), so any round can be recomputed from its number alone (no RNG state to checkpoint).

The checkpoint. After round r every worker holds the same parameters (the merged result of round r); admm
workers also their own x_i and u_i. A worker writes its state (sync_checkpoint.py) to the job's store, then its
record with rounds = r + 1 (and pushes = rounds, so a stale call's record never replaces a newer one). A resumed
worker reads its slot and re-enters round r + 1 of the exchange, which gives the same bits (faasgd.lambdaml.rounds). Round 0 starts from the job's initial weights.

Epoch end: every worker evaluates the global parameters (admm: z) on the validation rows (all hold the same
bits, so all reach the stop rule at the same round and no barrier is left waiting), appends its epoch event;
worker 0 writes them as the job's weights (store.set_weights, version = rounds: the simplest exact write
with the existing API; `faasgd model`, status and the result's final accuracy read them as for Downpour);
at the target, the job's model is kept by model_file.keep_crossing (first claim wins).

Backup workers (docs/reference/rounds.md): a late contribution counts in late_rounds, not in samples; a round merged
before it starts is taken uncomputed (taken_round); the merger's bound is backup_rounds.py.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from types import ModuleType
from typing import Callable

import numpy as np

from faasgd import data, job
from faasgd.job import model_file
from faasgd.lambdaml import convex
from faasgd.lambdaml.backup_rounds import LagBound
from faasgd.channels import configured_dynamodb, configured_space
from faasgd.config import TrainConfig, sync_pattern
from faasgd.lambdaml.rounds import Exchange, ExchangeConfig, RoundOutcome, RoundState, RoundStats
from faasgd.lambdaml.rounds import grad_avg_round, model_avg_round, taken_round
from faasgd.lambdaml.convex.admm import AdmmSettings
from faasgd.lambdaml.rounds.convex_rounds import admm_round, kmeans_round
from faasgd.worker.budget import UNLIMITED, CallBudget, HandOff, Superseded
from faasgd.worker.liveness import ENDED_CHECK_EVERY_S, Liveness
from faasgd.worker.progress import WorkerProgress
from faasgd.worker.store_calls import StoreCalls
from faasgd.worker.straggler import Slowdown
from faasgd.worker.curve_rows import evaluates_test_rows
from faasgd.lambdaml.sync_checkpoint import cluster_accuracy, decode_state, encode_state
from faasgd.store import ParameterStore, keys

log = logging.getLogger("faasgd.worker")


class JobFailed(Exception):
    """Raised when the job failed (its result or `lost` is written) while this worker waited at a barrier."""


class NoComms:
    """The Downpour worker's communication thread has no counterpart here (rounds are blocking)."""

    thread_ids: tuple = ()

    def thread_cpu_s(self) -> float:
        return 0.0

    def close(self) -> None:
        pass


class SyncWorker(Liveness, StoreCalls):
    """One worker's synchronous training over its shard; `progress` holds what must survive it."""

    def __init__(self, config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                 rows: data.WorkerRows, space, budget: CallBudget = UNLIMITED):
        store = store.authoritative()  # a node-local cache only serves Downpour's fetches: rounds read no weights
        self.config, self.store, self.job_id, self.progress = config, store, job_id, progress
        self.sizes, self.budget = job.network_sizes(config), budget
        shard, self.shard, self.validation, self.test = rows.train, rows.train, rows.validation, rows.test
        self.eval_scratch = model_file.eval_scratch(rows.test)  # evaluation rows scaled a chunk at a time, into one buffer
        self.workers, self.me = config.number_of_workers, progress.worker_id
        self.exchange = Exchange(space, job_id, self.me, ExchangeConfig(
            pattern=sync_pattern(config), workers=self.workers, round_timeout_s=config.round_timeout_s,
            op="sum" if config.model == "kmeans" else "mean", backup=config.backup_workers),  # kmeans sums the shards' sums and counts
            clock=self.clock, sleep=self.barrier_sleep)
        self.steps_per_round = config.local_steps if config.algorithm == "model_avg" else 1  # minibatches a round
        largest = max(b - a for a, b in (data.shard_range(shard.total, w, self.workers) for w in range(self.workers)))
        self.batch = min(config.batch_size, largest)  # a minibatch never repeats a row of the largest shard
        self.rounds_per_epoch = -(-(-(-largest // self.batch)) // self.steps_per_round)
        if config.model == "kmeans":  # a round is one Lloyd iteration over the whole shard: one round an epoch
            self.steps_per_round, self.batch, self.rounds_per_epoch = 1, len(shard.y), 1
        self.convex: ModuleType | None = None if config.model in ("mlp", "cnn") else convex.get_model(config.model)
        self.net = job.network(config)  # the MLP or the cnn (faasgd.model.network)
        self.length = self.net.param_count  # the job's weights (kmeans: its nearest-centroid linear form)
        self.state_length = {"admm": 3 * self.length}.get(config.algorithm, self.length)
        if config.model == "kmeans":
            self.state_length = self.sizes[0] * self.sizes[1]  # the centroids, (k, d) flat
        self.comms = NoComms()
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = progress.rng_state  # kept as is: rounds draw from (seed, worker, epoch)
        self.on_heartbeat: Callable[[], None] | None = None
        self.slowdown = Slowdown.for_worker(config, self.me, lambda seconds: self.sleep(seconds))  # slow_factor
        self.lag_bound = LagBound(self)  # backup workers: the merger's bound on how far behind a late worker may be
        self.period_s = self.eval_s = 0.0  # seconds a round / an evaluation takes: what a hand-off leaves room for
        self._last_push_at: float | None = None  # the last round's end (has_pushed: no hand-off before one)
        self._last_failed_check = -math.inf
        self._orders: dict[int, np.ndarray] = {}
        self.state = RoundState(self.load_state(), progress.lambdaml.rounds)

    def load_state(self) -> np.ndarray:
        """The state after `progress.lambdaml.rounds` rounds: the job's initial weights at 0, else this worker's checkpoint."""
        rounds = self.progress.lambdaml.rounds
        if rounds == 0:
            params, _ = self.retry(lambda: self.store.get_weights(self.job_id))
            params = np.asarray(params, np.float32)
            if self.config.model == "kmeans":  # every worker draws the same k of the (shared) validation rows
                rows = self.validation.x
                return convex.kmeans.init(rows, self.sizes[1], np.random.default_rng(self.config.seed))
            if self.config.algorithm == "admm":  # [z | u | x]: u = 0, x = z
                return np.concatenate([params, np.zeros_like(params), params])
            return params.copy()
        name = keys.sync_state_name(self.me, rounds)
        raw = self.retry(lambda: self.store.get_blob(self.job_id, name))
        return decode_state(raw, rounds, self.state_length, self.store.url, f"job {self.job_id!r} worker {self.me}")

    def checkpoint(self) -> None:
        """The state after the round just run (its slot), then the record naming it (see the module docstring)."""
        params, rounds = self.state.params, self.state.round_no
        blob = encode_state(rounds, params)
        self.retry(lambda: self.store.put_blob(self.job_id, keys.sync_state_name(self.me, rounds), blob))
        self.save()

    def save(self) -> None:
        """Write the record; Superseded if the store holds a newer one (another call is further on)."""
        self.progress.lambdaml.rounds = self.progress.pushes = self.state.round_no
        record = self.progress.record()
        if not self.retry(lambda: self.store.update_worker(self.job_id, self.me, record)):
            raise Superseded(f"worker {self.me}: another invocation wrote a newer record")

    def fetch(self, wait: bool = False) -> None:
        """Nothing to fetch between rounds: the parameters come out of each round (invocation.start calls it)."""

    def barrier_sleep(self, seconds: float) -> None:
        """A pause of a barrier's wait: the worker stays alive meanwhile (heartbeat, lease, looking after its
        peers, so a lost one is re-invoked while the others wait), and stops waiting once the job has failed."""
        self.heartbeat()
        now = self.clock()
        if now - self._last_failed_check >= ENDED_CHECK_EVERY_S:
            self._last_failed_check = now
            found = self.retry(lambda: self.store.get_records(self.job_id, [keys.RESULT, keys.LOST, keys.CANCELLED]))
            if any(value is not None for value in found.values()):  # not `done`: peers finishing a round still
                raise JobFailed(f"job {self.job_id} ended while worker {self.me} waited in round "
                                f"{self.state.round_no}")
        self.sleep(seconds)

    def check_budget(self, upcoming_s: float) -> None:
        reason = self.budget.stop_reason(upcoming_s)
        if reason:
            raise HandOff(reason)

    def settle(self) -> None:
        pass

    def end_call(self) -> None:
        pass  # a round's state is its checkpoint already (sync_checkpoint.py)

    # -- the data -------------------------------------------------------------------------------
    def order(self, epoch: int) -> np.ndarray:
        if epoch not in self._orders:
            self._orders = {epoch: np.random.default_rng([self.config.seed, self.me, epoch]).permutation(
                len(self.shard.y))}
        return self._orders[epoch]

    def minibatch(self, index: int):
        """This worker's minibatch `index` (counted from the job's start): exactly batch_size rows, wrapping."""
        per_epoch = self.rounds_per_epoch * self.steps_per_round
        epoch, k = divmod(index, per_epoch)
        order, batch = self.order(epoch), self.batch
        rows = order[(k * batch + np.arange(batch)) % len(order)]
        x = self.shard.x[rows]
        return (x if self.convex is not None or x.dtype == np.float32 else data.scale_rows(x, 0, len(rows))), \
            self.shard.y[rows]

    def grad(self, params: np.ndarray, index: int) -> tuple[float, np.ndarray]:
        """Minibatch `index`'s loss and gradient; a slowed worker (slow_factor) then sleeps (factor - 1) x its time."""
        started = time.perf_counter()
        x, y = self.minibatch(index)
        if self.convex is not None:
            loss, g = self.convex.loss_and_grad(params, x, y)
        else:
            rng = np.random.default_rng([self.config.seed, self.me, index, 1])  # dropout: a function of the minibatch
            loss, g = self.net.loss_and_grads(params, x, y, rng)
        self.slowdown.after(time.perf_counter() - started, self.progress)
        return float(loss), g

    # -- rounds ----------------------------------------------------------------------------------
    def run_round(self) -> RoundOutcome:
        cfg = self.config
        if cfg.backup_workers and self.exchange.merger(0) == self.me:
            self.lag_bound.wait(self.state.round_no)  # no round merged too far ahead of a late worker
        elif cfg.backup_workers:  # merged without this worker already: take it, go on (backup_rounds.py)
            ready = self.exchange.merged_if_ready(self.state.round_no, self.length)
            if ready is not None:
                return taken_round(cfg.algorithm, self.state, *ready, lr=cfg.learning_rate)
        if cfg.algorithm == "grad_avg":
            return grad_avg_round(self.state, self.grad, self.exchange, lr=cfg.learning_rate)
        if cfg.model == "kmeans":
            return kmeans_round(self.state, (self.shard.x, self.shard.y), self.exchange)
        if cfg.algorithm == "model_avg":
            return model_avg_round(self.state, self.grad, self.exchange, lr=cfg.learning_rate,
                                   local_steps=cfg.local_steps)
        return self.admm_round()

    def admm_round(self) -> RoundOutcome:
        """Consensus ADMM (faasgd.lambdaml.rounds.convex_rounds.admm_round): `local_steps` x-update steps on this round's
        minibatch, weighted by the shard's share of the rows (N n_i / n), from the state [z | u_i | x_i]."""
        cfg, r = self.config, self.state.round_no
        weight = self.workers * len(self.shard.y) / self.shard.total
        return admm_round(self.state, self.minibatch(r), self.convex, self.exchange,
                          AdmmSettings(cfg.admm_rho, cfg.local_steps, cfg.learning_rate), weight)

    def global_params(self) -> np.ndarray:
        """The job's model: the parameters (admm: z); kmeans: nearest-centroid assignment as a linear model,
        W = C^T, b = -|c|^2 / 2 (argmax of x.W + b is the nearest centroid), in the job's (d, k) layout."""
        if self.config.model != "kmeans":
            return self.state.params[:self.length]
        d, k = self.sizes
        C = self.state.params.reshape(k, d).astype(np.float64)
        return np.concatenate([C.T.ravel(), -0.5 * np.einsum("ij,ij->i", C, C)]).astype(np.float32)

    def run_epoch(self) -> bool:
        """The rest of the current epoch's rounds, a checkpoint after each; False if the job ended meanwhile."""
        progress = self.progress
        started = time.perf_counter()
        for index in range(progress.epoch_step, self.rounds_per_epoch):
            if self.job_ended():
                progress.train_s += time.perf_counter() - started
                return False
            self.heartbeat()
            at = self.clock()
            try:
                outcome = self.run_round()
            except JobFailed:
                progress.train_s += time.perf_counter() - started
                return False
            self.state = outcome.state
            self.add_stats(outcome.stats)
            progress.step += self.steps_per_round
            if not outcome.stats.late:  # samples the model was trained on: a dropped contribution trained nothing
                progress.samples += self.steps_per_round * self.batch
                progress.epoch_loss_sum += outcome.loss
            progress.epoch_step = index + 1
            progress.train_s, started = progress.train_s + time.perf_counter() - started, time.perf_counter()
            self.checkpoint()
            now = self.clock()
            self.period_s = now - at if not self.period_s else 0.8 * self.period_s + 0.2 * (now - at)
            self._last_push_at = now
            if index + 1 < self.rounds_per_epoch:
                self.check_budget(self.period_s + self.eval_s)
        progress.train_s += time.perf_counter() - started
        return True

    def add_stats(self, stats: RoundStats) -> None:
        p = self.progress
        p.lambdaml.round_bytes_written += stats.bytes_written
        p.lambdaml.round_bytes_read += stats.bytes_read
        p.lambdaml.barrier_wait_s += stats.wait_s
        p.straggling.late_rounds += stats.late
        p.straggling.merged_contributions += stats.merged

    def evaluate(self, weights: np.ndarray, rows: data.Shard | None = None) -> float:
        shard = rows if rows is not None else self.validation
        if self.convex is None:
            return model_file.accuracy_on(shard, weights, self.sizes, self.config.activation, self.net, self.eval_scratch)
        if self.config.model == "kmeans":
            return cluster_accuracy(weights, self.validation, shard)
        return self.convex.accuracy(weights, shard.x, shard.y)

    def end_of_epoch(self) -> bool:
        """Evaluate the global parameters (the stop rule), write them as the job's weights (worker 0), keep the
        job's model at the target, save the record. True when training stops (the same round on every worker)."""
        progress, params = self.progress, self.global_params().copy()
        steps = max(1, progress.epoch_step)
        progress.epoch, progress.epoch_step = progress.epoch + 1, 0
        progress.loss, progress.epoch_loss_sum = progress.epoch_loss_sum / steps, 0.0
        progress.lambdaml.params_digest = hashlib.sha256(params.astype("<f4").tobytes()).hexdigest()
        started = self.clock()
        progress.accuracy, progress.accuracy_epoch = self.evaluate(params), progress.epoch  # every epoch end here
        # every worker holds the same parameters here: one a round evaluates the test rows (worker/curve_rows.py)
        tests = evaluates_test_rows(progress.epoch, self.me, self.workers, progress.epoch >= self.config.max_epochs)
        test_accuracy = self.evaluate(params, self.test) if tests else None
        self.eval_s = self.clock() - started
        if self.me == 0:
            self.retry(lambda: self.store.set_weights(self.job_id, params, version=self.state.round_no,
                                                       writers=self.workers, rule=job.update_rule(self.config)))
        now = self.progress.now()  # on the job's timeline (worker/call_clock.py)
        self.retry(lambda: self.store.append_event(self.job_id, {
            "event": "epoch", "worker_id": self.me, "epoch": progress.epoch, "round": self.state.round_no,
            "accuracy": progress.accuracy, "test_accuracy": test_accuracy, "at": now}))
        log.info("job %s worker %d: epoch %d (round %d), validation accuracy %.4f, loss %.4f", self.job_id, self.me,
                 progress.epoch, self.state.round_no, progress.accuracy, progress.loss)
        reached = progress.accuracy >= self.config.target_accuracy
        if reached:
            records = self.retry(lambda: job.read_progress(self.store, self.job_id, self.workers))
            samples = sum(int((r or {}).get("samples", 0)) for r in records.values() if r) \
                - int((records.get(self.me) or {}).get("samples", 0)) + progress.samples
            crossing = {"validation_accuracy": progress.accuracy, "at": now, "samples": samples,
                        "epochs": samples / self.shard.total, "version": self.state.round_no}
            self.retry(lambda: model_file.keep_crossing(
                self.store, self.job_id, self.me, params,
                lambda: self.evaluate(params, self.test) if test_accuracy is None else test_accuracy, crossing))
        self.save()
        self.heartbeat(force=True)
        return reached or progress.epoch >= self.config.max_epochs


def load_sync_worker(config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                     loader: Callable[..., data.Shard] = data.load_shard, budget: CallBudget = UNLIMITED,
                     space=None) -> SyncWorker:
    """Load this worker's shard (float32: images scaled, tabular rows dense or CSR) and the validation and test
    rows, and build its trainer over `space` (default: the job's channel)."""
    progress.note_replica()
    _, held = job.holdout(config)
    shard = loader(config.dataset, "train", progress.worker_id, config.number_of_workers, config.train_samples,
                   scaled=True, holdout=held)
    validation = loader(config.dataset, "validation", 0, 1, config.train_samples, scaled=True, holdout=held)
    after = {"after": config.train_samples} if data.is_tabular(config.dataset) else {}  # generated test rows follow
    test = loader(config.dataset, "test", 0, 1, config.test_samples, scaled=True, **after)
    progress.shard_size = len(shard.y)
    return SyncWorker(config, store, job_id, progress, data.WorkerRows(shard, validation, test),
                      space if space is not None else channel_space(config, store), budget)


def channel_space(config: TrainConfig, store: ParameterStore):
    """The blob space of the job's rounds: the job's store, or this function's configured S3 space or DynamoDB tables."""
    if config.channel == "s3":
        return configured_space(os.environ)  # the function's own s3_url and secrets, never the request's
    if config.channel == "dynamodb":
        return configured_dynamodb(os.environ)  # the function's own tables and secrets, never the request's
    return store.authoritative()

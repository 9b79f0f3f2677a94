"""Per-iteration mode: one epoch per invocation, a checkpoint between them, a lease per iteration.

An invocation `(job_id, worker_id, iteration k)`:
1. takes the lease `lease:<worker>:<k>` (faasgd.sgd.lease). Another holder means a duplicate
   delivery: answer `duplicate` and train nothing.
2. reads the checkpoint `checkpoint:<worker>` = {"iteration": n, "state": WorkerProgress}. n > k means
   iteration k was already trained (a late duplicate); n < k is an invocation from the future (an
   error). n == k: restore the progress (counters, epoch, RNG), fetch, train one epoch, push, evaluate.
3. writes the checkpoint with n = k + 1, and tells the caller to invoke iteration k + 1 unless
   the job's stop rule ended this worker (then the worker is counted as ended, as in loop mode).
The caller re-invokes before the lease is released; a crash between the checkpoint write and the
re-invocation ends that worker's chain (the window is a few milliseconds; see README).
"""

from __future__ import annotations

import time
from typing import Callable

from faasgd import data, job
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError
from faasgd.sgd.lease import Lease
from faasgd.sgd.progress import WorkerProgress
from faasgd.sgd.worker import end_worker, load_worker
from faasgd.store import ParameterStore


def checkpoint_name(worker_id: int) -> str:
    return f"checkpoint:{worker_id}"


def outcome(job_id: str, worker_id: int, iteration: int, *, duplicate: bool, next_iteration: int | None,
            reason: str, state: str | None = None) -> dict:
    return {"job_id": job_id, "worker_id": worker_id, "iteration": iteration, "duplicate": duplicate,
            "next_iteration": next_iteration, "reason": reason, "state": state}


def run_iteration(config: TrainConfig, store: ParameterStore, job_id: str, worker_id: int, iteration: int,
                  call_id: str = "", loader: Callable[..., data.Shard] = data.load_shard,
                  chain: Callable[[int], None] | None = None) -> dict:
    """Train iteration `iteration` of a worker once, however often it is delivered.

    `chain(k)` is called to invoke iteration k next (before the lease is released).
    """
    lease = Lease(store, job_id, worker_id, iteration, call_id, config.lease_s)
    if not lease.acquire():
        return outcome(job_id, worker_id, iteration, duplicate=True, next_iteration=None,
                       reason="another delivery holds this iteration's lease")
    try:
        record = store.get_record(job_id, checkpoint_name(worker_id))
        trained = record["iteration"] if record else 0
        if trained > iteration:
            return outcome(job_id, worker_id, iteration, duplicate=True, next_iteration=None,
                           reason=f"iteration already trained (checkpoint at {trained})")
        if trained < iteration:
            raise ConfigError("iteration", f"worker {worker_id} has trained {trained} iteration(s); "
                                           f"cannot run iteration {iteration} before them")
        progress = (WorkerProgress.from_checkpoint(record["state"]) if record
                    else WorkerProgress.fresh(worker_id, config.seed))
        if progress.state != "running":
            return outcome(job_id, worker_id, iteration, duplicate=True, next_iteration=None,
                           reason=f"worker already {progress.state}", state=progress.state)
        try:
            stop, trainer = train_one(config, store, job_id, progress, loader, lease.renew)
        except BaseException as error:
            progress.state, progress.error = "failed", f"worker {worker_id}: {error}"
            _best_effort(lambda: store.put_record(job_id, checkpoint_name(worker_id),
                                                  {"iteration": iteration, "state": progress.to_checkpoint()}))
            end_worker(store, job_id, config, progress, None)
            raise
        store.put_record(job_id, checkpoint_name(worker_id), {"iteration": iteration + 1,
                                                              "state": progress.to_checkpoint()})
        if stop:
            end_worker(store, job_id, config, progress, trainer)
            return outcome(job_id, worker_id, iteration, duplicate=False, next_iteration=None,
                           reason="stop rule reached", state=progress.state)
        if chain is not None:
            chain(iteration + 1)
        return outcome(job_id, worker_id, iteration, duplicate=False, next_iteration=iteration + 1,
                       reason="trained one epoch", state=progress.state)
    finally:
        lease.release()


def train_one(config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
              loader, renew: Callable[[], None]):
    """One epoch from a restored progress; (True when this worker reached its stop rule, the trainer)."""
    if progress.started_at is None:
        progress.started_at = time.time()
    trainer = load_worker(config, store, job_id, progress, loader)
    trainer.on_progress = renew
    if job.is_done(store, job_id):
        stop = True
    else:
        trainer.fetch()
        stop = not trainer.run_epoch() or trainer.end_of_epoch()
    trainer.save_rng()
    if stop:
        progress.state = "finished"
    return stop, trainer


def _best_effort(call: Callable[[], None]) -> None:
    try:
        call()
    except Exception:  # the store may be the thing that failed; the caller re-raises the cause
        pass

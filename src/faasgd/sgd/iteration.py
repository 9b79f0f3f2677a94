"""Per-iteration mode: one epoch per invocation, a checkpoint between them, a lease per iteration.

An invocation `(job_id, worker_id, iteration k)`:
1. takes the lease `lease:<worker>:<k>` (set-if-absent with a TTL of `lease_s`, renewed at every
   progress write). Another holder means a duplicate delivery: answer `duplicate` and train nothing.
   A holder with *our own* call id is an earlier delivery of this very message that died (the
   gateway redelivers the same X-Call-Id): wait for its lease to expire, then take over.
2. reads the checkpoint `checkpoint:<worker>` = {"iteration": n, "state": WorkerState}. n > k means
   iteration k was already trained (a late duplicate); n < k is an invocation from the future (an
   error). n == k: restore the state (counters, epoch, RNG), fetch, train one epoch, push, evaluate.
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
from faasgd.sgd.state import WorkerState
from faasgd.sgd.worker import end_worker, load_worker
from faasgd.store import ParameterStore

LEASE_POLL_S = 0.5  # how often a redelivery checks whether the dead holder's lease has expired


def checkpoint_name(worker_id: int) -> str:
    return f"checkpoint:{worker_id}"


def lease_name(worker_id: int, iteration: int) -> str:
    return f"lease:{worker_id}:{iteration}"


def acquire_lease(store: ParameterStore, job_id: str, name: str, call_id: str, ttl_s: int,
                  sleep: Callable[[float], None] = time.sleep) -> bool:
    """Take the lease; wait out a lease held under our own call id (a dead earlier delivery)."""
    value = {"call_id": call_id, "at": time.time()}
    if store.add_record(job_id, name, value, ttl_s=ttl_s):
        return True
    holder = store.get_record(job_id, name)
    if holder is not None and (not call_id or holder.get("call_id") != call_id):
        return False
    deadline = time.monotonic() + ttl_s + 2 * LEASE_POLL_S
    while time.monotonic() < deadline:
        if store.add_record(job_id, name, value, ttl_s=ttl_s):
            return True
        sleep(LEASE_POLL_S)
    return False


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
    lease = lease_name(worker_id, iteration)
    if not acquire_lease(store, job_id, lease, call_id, config.lease_s):
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
        state = WorkerState.from_checkpoint(record["state"]) if record else WorkerState.fresh(worker_id, config.seed)
        if state.state != "running":
            return outcome(job_id, worker_id, iteration, duplicate=True, next_iteration=None,
                           reason=f"worker already {state.state}", state=state.state)
        renew = lambda: store.put_record(job_id, lease, {"call_id": call_id, "at": time.time()},  # noqa: E731
                                         ttl_s=config.lease_s)
        try:
            stop, trainer = train_one(config, store, job_id, state, loader, renew)
        except BaseException as error:
            state.state, state.error = "failed", f"worker {worker_id}: {error}"
            _best_effort(lambda: store.put_record(job_id, checkpoint_name(worker_id),
                                                  {"iteration": iteration, "state": state.to_checkpoint()}))
            end_worker(store, job_id, config, state, None, None)
            raise
        store.put_record(job_id, checkpoint_name(worker_id), {"iteration": iteration + 1,
                                                              "state": state.to_checkpoint()})
        if stop:
            end_worker(store, job_id, config, state, trainer, None)
            return outcome(job_id, worker_id, iteration, duplicate=False, next_iteration=None,
                           reason="stop rule reached", state=state.state)
        if chain is not None:
            chain(iteration + 1)
        return outcome(job_id, worker_id, iteration, duplicate=False, next_iteration=iteration + 1,
                       reason="trained one epoch", state=state.state)
    finally:
        store.delete_record(job_id, lease)


def train_one(config: TrainConfig, store: ParameterStore, job_id: str, state: WorkerState,
              loader, renew: Callable[[], None]):
    """One epoch from a restored state; (True when this worker reached its stop rule, the trainer)."""
    if state.started_at is None:
        state.started_at = time.time()
    trainer = load_worker(config, store, job_id, state, job.network_sizes(config), loader)
    trainer.on_progress = renew
    if job.is_done(store, job_id):
        stop = True
    else:
        trainer.fetch()
        stop = not trainer.run_epoch() or trainer.end_of_epoch()
    trainer.save_rng()
    trainer.sync_conflicts()
    if stop:
        state.state = "finished"
    return stop, trainer


def _best_effort(call: Callable[[], None]) -> None:
    try:
        call()
    except Exception:  # the store may be the thing that failed; the caller re-raises the cause
        pass

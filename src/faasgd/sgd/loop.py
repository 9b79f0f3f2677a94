"""Loop mode: one invocation trains its worker to the job's stop rule, guarded by a lease."""

from __future__ import annotations

import logging
import os
import time
from typing import Callable

from faasgd import data, job
from faasgd.config import TrainConfig
from faasgd.sgd.lease import Lease
from faasgd.sgd.progress import WorkerProgress
from faasgd.sgd.worker import end_worker, load_worker
from faasgd.store import ParameterStore

log = logging.getLogger("faasgd.worker")


def run_worker(config: TrainConfig, store: ParameterStore, job_id: str, worker_id: int,
               loader: Callable[..., data.Shard] = data.load_shard,
               on_progress: Callable[[], None] | None = None) -> dict:
    """Train worker `worker_id` of the job to its stop rule; returns its final progress record.

    A failure (store gone past its deadline, missing data, a bug) is written to the worker's
    progress record when the store allows, counted towards the job's end, and re-raised.
    """
    progress = WorkerProgress.fresh(worker_id, config.seed)
    trainer = None
    try:
        trainer = load_worker(config, store, job_id, progress, loader)
        trainer.on_progress = on_progress
        progress.started_at = time.time()
        log.info("job %s worker %d: training on %d rows (%s, %d workers, mode %s)", job_id, worker_id,
                 progress.shard_size, config.dataset, config.number_of_workers, config.invocation_mode)
        while trainer.run_epoch() and not trainer.end_of_epoch():
            pass
        progress.state = "finished"
    except BaseException as error:  # recorded, then re-raised
        progress.state, progress.error = "failed", f"worker {worker_id}: {error}"
        end_worker(store, job_id, config, progress, trainer)
        raise
    return end_worker(store, job_id, config, progress, trainer)


def run_loop_call(config: TrainConfig, store: ParameterStore, job_id: str, worker_id: int, call_id: str,
                  loader: Callable[..., data.Shard] = data.load_shard) -> dict:
    """One loop-mode invocation: the whole worker, unless another delivery ran or runs it."""
    answer = {"job_id": job_id, "worker_id": worker_id, "iteration": 0}
    record = store.get_record(job_id, job.progress_name(worker_id))
    lease = Lease(store, job_id, worker_id, "loop", call_id, config.lease_s)
    if (record and record.get("state") != "running") or not lease.acquire():
        return {**answer, "duplicate": True, "reason": "this worker already ran or is running"}
    try:
        final = run_worker(config, store, job_id, worker_id, loader, on_progress=lease.renew)
    finally:
        lease.release()
    return {**answer, "duplicate": False, "state": final["state"], "progress": final,
            "replica": os.environ.get("HOSTNAME", "")}

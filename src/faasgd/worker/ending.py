"""A worker's end, whatever its kind: its last record; a failure fails the job; the last worker writes the result."""

from __future__ import annotations

import logging

from faasgd.config import TrainConfig
from faasgd.job import ending as job_ending
from faasgd.job.result import class_shares
from faasgd.retry import STORE_OUTAGE, retry_call
from faasgd.store import ParameterStore
from faasgd.worker.progress import WorkerProgress
from faasgd.worker.protocol import Worker

log = logging.getLogger("faasgd.worker")


def end_worker(store: ParameterStore, job_id: str, config: TrainConfig, progress: WorkerProgress,
               trainer: Worker | None) -> dict:
    """Write the worker's final record; a failure fails the job; the last worker to end writes the result.
    Best effort once the store is gone (the caller reports the cause)."""
    if trainer is not None:
        trainer.settle()  # a push still in flight lands first
        progress.rng_state = trainer.rng.bit_generator.state
    progress.finished_at = progress.now()  # the call's clock: on the job's timeline
    record = progress.record(progress.finished_at)
    log.log(logging.WARNING if progress.error else logging.INFO, "job %s worker %d: %s after %d samples%s",
            job_id, progress.worker_id, progress.state, progress.samples,
            f": {progress.error}" if progress.error else "")
    # A worker that gave up on the store retries for as long again; one that finished waits out an outage.
    policy = STORE_OUTAGE.within(config.store_timeout_s)
    try:
        if not retry_call(lambda: store.update_worker(job_id, progress.worker_id, record), policy):
            return record  # superseded: the invocation that owns the worker now ends it
        if progress.error:
            retry_call(lambda: job_ending.write_result(store, job_id, error=progress.error), policy)
        else:
            evaluate = None if trainer is None else (
                lambda w: (trainer.evaluate(w), trainer.evaluate(w, trainer.test)))  # (validation, test)
            shares = () if trainer is None else class_shares(trainer.test.y)
            retry_call(lambda: job_ending.finish_worker(store, job_id, config, evaluate, shares), policy)
    except Exception as error:  # the store is gone: the caller reports the cause
        log.warning("job %s worker %d: could not record its end: %s", job_id, progress.worker_id, error)
    return record

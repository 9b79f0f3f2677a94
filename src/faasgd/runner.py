"""Running a job's workers as processes on this machine, straight against the store.

This is what `faasgd train` does without OpenFaaS: the same job records and worker loop that the
functions use, with each worker in its own process (one BLAS thread each).
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from typing import Callable

from faasgd import data, job
from faasgd.config import TrainConfig, config_from_record
from faasgd.errors import FaasgdError, StoreError
from faasgd.retry import with_retry
from faasgd.sgd import run_worker
from faasgd.sgd.iteration import run_iteration
from faasgd.store import ParameterStore, open_store
from faasgd.store.node_local import NodeLocalStore

POLL_S = 0.5  # how often the runner reads progress for the display


def prepare_job(config: TrainConfig) -> tuple[ParameterStore, str]:
    """Check the store and the data, then create the job. Nothing is written before both check out."""
    store = open_store(config.store_url)
    store.ping()
    data.load_shard(config.dataset, "test", 0, 1, limit=1)  # DataError (how to get it) before any write
    return store, job.create_job(store, config)


def _worker_main(config_record: dict, job_id: str, worker_id: int, errors) -> None:
    """Entry point of a worker process: one BLAS thread, its own store client, the worker loop."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    config = config_from_record(config_record)
    try:
        store = open_store(config.store_url)
        if config.store_topology == "node-local":
            store = NodeLocalStore(store, config.store_url, config.local_store_url, config.local_refresh_s)
        if config.mode == "per-iteration":
            run_iterations(config, store, job_id, worker_id)
        else:
            run_worker(config, store, job_id, worker_id)
        errors.put((worker_id, None))
    except FaasgdError as error:
        errors.put((worker_id, str(error)))
    except Exception as error:  # a bug: report it rather than die silently
        errors.put((worker_id, f"{type(error).__name__}: {error}"))


def run_iterations(config: TrainConfig, store: ParameterStore, job_id: str, worker_id: int) -> None:
    """Per-iteration mode without a gateway: one invocation per epoch, chained in this process."""
    iteration = 0
    while iteration is not None:
        iteration = run_iteration(config, store, job_id, worker_id, iteration,
                                  call_id=f"local-{job_id}-{worker_id}-{iteration}")["next_iteration"]


def run_processes(
    config: TrainConfig,
    store: ParameterStore,
    job_id: str,
    on_progress: Callable[[dict[int, dict | None]], None] | None = None,
) -> dict:
    """Run the job's workers as processes, report progress, and return the job's result record."""
    _, meta = job.read_job(store, job_id)
    if config.mode == "single":
        return _run_inline(config, store, job_id, meta, on_progress)
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    procs = [
        ctx.Process(target=_worker_main, args=(config.to_dict(), job_id, i, errors), name=f"faasgd-worker-{i}")
        for i in range(config.number_of_workers)
    ]
    for proc in procs:
        proc.start()
    last_seen: dict[int, dict | None] = {}
    try:
        while any(proc.is_alive() for proc in procs):
            last_seen = _poll(store, job_id, config, on_progress) or last_seen
            time.sleep(POLL_S)
    finally:
        for proc in procs:
            proc.join(timeout=None if proc.exitcode is not None else 5)
            if proc.is_alive():
                proc.terminate()
    last_seen = _poll(store, job_id, config, on_progress) or last_seen
    worker_errors = _drain(errors)
    for i, proc in enumerate(procs):
        if proc.exitcode not in (0, None) and i not in worker_errors:
            worker_errors[i] = f"worker {i}: process exited with code {proc.exitcode}"
    return collect_result(store, job_id, config, meta, last_seen, worker_errors)


def _run_inline(config, store, job_id, meta, on_progress) -> dict:
    errors: dict[int, str] = {}
    try:
        run_worker(config, store, job_id, 0)
    except FaasgdError as error:
        errors[0] = str(error)
    return collect_result(store, job_id, config, meta, _poll(store, job_id, config, on_progress) or {}, errors)


def _poll(store, job_id, config, on_progress) -> dict[int, dict | None] | None:
    try:
        progress = job.read_progress(store, job_id, config.number_of_workers)
    except StoreError:
        return None
    if on_progress is not None:
        on_progress(progress)
    return progress


def _drain(errors) -> dict[int, str]:
    out: dict[int, str] = {}
    while True:
        try:
            worker_id, message = errors.get(timeout=0.2)
        except queue.Empty:
            return out
        if message:
            out[worker_id] = message


def collect_result(store, job_id, config, meta, last_seen, worker_errors: dict[int, str]) -> dict:
    """The job's result record: the one the last worker wrote, or one written here when workers died.

    When the store itself is gone the result is built from the last progress seen and returned
    (not stored), with the store error as its `error`.
    """
    error = worker_errors[min(worker_errors)] if worker_errors else None

    def read_or_write() -> dict:
        result = store.get_record(job_id, "result")
        if result is None:
            result = job.write_result(store, job_id, error=error or "no worker wrote the result")
        return result

    try:
        return with_retry(read_or_write, 2.0 if error else config.store_timeout_s)
    except StoreError as store_error:
        return job.build_result(config, meta, last_seen or {}, None, None, error or str(store_error))

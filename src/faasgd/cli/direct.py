"""`faasgd train --direct`: the job's workers as local processes against the store, no gateway.

The workers fork from a forkserver (cli/forkserver.py) that has done their imports: they start in milliseconds.

The same orchestration as the functions (faasgd.functions.orchestrate): create_job, launch_workers
(a launch is a process here), train_call inside each process (per-iteration chains its epochs in the
process), and the job's status read straight from the store by the one wait_for_job. When every
worker process has exited and no result was written, the job is failed here with their exit codes.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from faasgd import job
from faasgd.job import ending, result
from faasgd.config import TrainConfig
from faasgd.errors import FaasgdError, StoreError
from faasgd.cli import forkserver
from faasgd.functions import orchestrate, replica_cache
from faasgd.openfaas import wait_for_job
from faasgd.store import ParameterStore

log = logging.getLogger("faasgd.direct")


def worker_process(request: orchestrate.TrainRequest, store_url: str) -> None:
    """A worker process: one BLAS thread, its own store client, its invocations until the worker ends."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's: it cancels the job, which ends this
    store = replica_cache.store_for(store_url)
    try:
        while request is not None:
            call_id = f"direct-{request.job_id}-{request.worker_id}-{request.iteration}"
            answer = orchestrate.train_call(store, request, call_id)
            following = answer.get("next_iteration")
            request = None if following is None else request.next(following)
    except FaasgdError as error:  # already in the worker's progress record when the store allowed
        print(f"faasgd: worker {request.worker_id}: {error}", file=sys.stderr)
        sys.exit(1)


@contextmanager
def signals_held(*signums: int) -> Iterator[None]:
    """Run the block with these signals' handlers held back: one that arrives meanwhile is handled as it would have
    been once the block is done (in the main thread; elsewhere Python runs no signal handler anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, object]] = []
    previous = {signum: signal.signal(signum, lambda n, frame: caught.append((n, frame))) for signum in signums}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum, frame in caught[:1]:
            handler = previous[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


class WorkerProcesses:
    """Launches worker processes (forked from the forkserver: no state shared with this one) and knows how they
    ended."""

    def __init__(self, store_url: str):
        self.store_url = store_url
        self.context = forkserver.start()
        self.processes: list[multiprocessing.process.BaseProcess] = []

    def launch(self, request: orchestrate.TrainRequest) -> str:
        process = self.context.Process(target=worker_process, args=(request, self.store_url),
                                       name=f"faasgd-worker-{request.worker_id}")
        # Ctrl-C or SIGTERM while it starts would leave it running untracked (the forkserver has forked it, its pid
        # not yet read): they wait until it is listed, and `stop` then ends it with the others
        with signals_held(signal.SIGINT, signal.SIGTERM):
            process.start()
            self.processes.append(process)
        return f"pid-{process.pid}"

    def sleep(self, seconds: float) -> None:
        """Sleep `seconds`, less when a running worker process ends (the job's last worker ends right after its
        result is written: the job's end is seen then, not up to a status poll later)."""
        running = [p.sentinel for p in self.processes if p.exitcode is None]
        if running:
            multiprocessing.connection.wait(running, seconds)
        else:
            time.sleep(seconds)

    def all_exited(self) -> bool:
        return all(not p.is_alive() for p in self.processes)

    def exit_codes(self) -> list[int | None]:
        return [p.exitcode for p in self.processes]

    def stop(self) -> None:
        for process in self.processes:
            process.join(timeout=0 if process.exitcode is None else None)
            if process.is_alive():
                process.terminate()
                process.join(5)


def run_job(config: TrainConfig, store: ParameterStore, job_id: str, timeout_s: float,
            on_status: Callable[[dict], None] | None = None,
            on_interrupt: Callable[[Callable[[float], dict]], dict] | None = None) -> dict:
    """Run a created job's workers here and return its final status (its result under "result"). Ctrl-C while the
    workers run (they ignore it themselves) calls `on_interrupt(wait)` when given, which may cancel the job and
    `wait(seconds)` for its end with the workers still running; the workers are stopped once it returns."""
    if config.invocation_mode == "single":
        orchestrate.run_single(store, config, job_id)
        status = job.read_status(store, job_id)
        if on_status is not None:
            on_status(status)
        return status
    workers = WorkerProcesses(config.store_url)
    try:
        orchestrate.launch_workers(store, config, job_id, workers.launch)

        def wait(seconds: float, watch: Callable[[dict], None] | None = None) -> dict:
            return wait_for_job(lambda: read_status(store, job_id, workers), seconds, on_status=watch,
                                sleep=workers.sleep)

        try:
            return wait(timeout_s, on_status)
        except KeyboardInterrupt:
            if on_interrupt is None:
                raise
            return on_interrupt(wait)  # the live progress has ended: the rest is waited for without it
    finally:
        workers.stop()


def read_status(store: ParameterStore, job_id: str, workers: WorkerProcesses) -> dict:
    """The job's status; failed here when its workers have all exited without a result."""
    exited = workers.all_exited()
    try:
        status = job.read_status(store, job_id)
    except StoreError as error:
        if not exited:
            return {"state": "running", "workers": [], "config": None, "result": None, "unreachable": str(error)}
        return {"job_id": job_id, "state": "failed", "workers": [], "config": None,
                "result": result.missing(job_id, f"{error}; worker exit codes {workers.exit_codes()}")}
    if status["state"] == "running" and exited:
        error = f"every worker process exited (codes {workers.exit_codes()}) and none wrote the result"
        ending.write_result(store, job_id, error=error)
        status = job.read_status(store, job_id)
    return status


def train(config: TrainConfig, timeout_s: float = 24 * 3600.0,
          on_status: Callable[[dict], None] | None = None) -> dict:
    """Create the job and run it here to its end; its result (the benches' entry point). `on_status` sees every
    status read while it runs."""
    forkserver.start()  # when not started yet: its imports run beside the job's creation
    store = replica_cache.store_for(config.store_url)
    job_id = orchestrate.create_job(store, config)
    status = run_job(config, store, job_id, timeout_s, on_status)
    return status.get("result") or result.missing(job_id, f"still running after {timeout_s:g} s")

"""The one orchestration of a job, shared by the functions and by `faasgd train --direct`.

    create_job      check the store answers and the data exists, then write the job's records
    launch_workers  one launch per worker: an async call through the gateway (emnist-setup), or a
                    local process (--direct); a launch that fails fails the job
    train_call      one invocation of a worker, in the job's mode (loop or per-iteration), which
                    also looks after the other workers at its heartbeats (supervise.py)
    run_single      single mode: one worker inside the caller, handed to emnist-train if it must stop
How a launch or a relaunch reaches a worker is the caller's; what happens in the store is here.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from typing import Any, Callable

from faasgd import data, job, tracing
from faasgd.job import ending, result
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError, FaasgdError
from faasgd.functions import replica_cache, supervise
from faasgd.functions.train_request import TrainRequest
from faasgd.functions.workloads import run_iteration, run_loop_call, run_worker
from faasgd.retry import STORE_OUTAGE, retry_call
from faasgd.worker.budget import UNLIMITED, CallBudget, HandOff
from faasgd.worker.call_clock import CallClock
from faasgd.worker import straggler
from faasgd.worker.invocation import Call
from faasgd.store import ParameterStore, keys

log = logging.getLogger("faasgd.orchestrate")
Relaunch = Callable[[TrainRequest], Any]  # invoke a worker (again): the gateway's async route, or a process
# emnist-setup's async calls in flight at once: each waits a round trip to the gateway, which answers once the queue's
# broker acknowledged the call (bench/fanout.py); one at a time, a 1,024-worker fan-out waited for 1,024 in a row
FAN_OUT_IN_FLIGHT = 16

def create_job(store: ParameterStore, config: TrainConfig) -> str:
    """Check the store answers and the data exists, then create the job; nothing is written before."""
    store.ping()
    data.load_shard(config.dataset, "test", 0, 1, limit=1)  # DataError (saying how to get it) first
    return job.create_job(store, config)


def launch_workers(store: ParameterStore, config: TrainConfig, job_id: str,
                   launch: Callable[[TrainRequest], str], clock: CallClock | None = None,
                   in_flight: int = 1) -> list[str]:
    """Launch every worker of the job (`launch` returns a call id), `in_flight` launches at once (emnist-setup's
    async calls: FAN_OUT_IN_FLIGHT); the first failure launches no more and fails the job. Returns the call ids in
    worker order. `clock`: the launching call's (emnist-setup's), billed up to here in a "call" event (before any
    worker can end the job)."""
    if clock is not None:
        store.append_event(job_id, {"event": "call", "kind": "setup", "duplicate": False, **clock.billed()})
    launched: dict[int, str] = {}
    try:
        each_at_most_once(config.number_of_workers, in_flight, launched,
                          lambda worker_id: launch(TrainRequest(job_id, worker_id, 0, config.store)))
    except Exception as error:  # any error, not only ours: the job ends failed naming it, never stays running
        reason = str(error) if isinstance(error, FaasgdError) else f"{type(error).__name__}: {error}"
        ending.write_result(store, job_id, error=f"fan-out stopped after {len(launched)} of "
                                                 f"{config.number_of_workers} workers: {reason}")
        raise
    call_ids = [launched[worker_id] for worker_id in range(config.number_of_workers)]
    store.append_event(job_id, {"event": "fanned-out", "call_ids": call_ids})
    return call_ids


def each_at_most_once(count: int, in_flight: int, done: dict[int, Any], call: Callable[[int], Any]) -> None:
    """call(i) for i in 0..count-1, each once, `in_flight` at a time (threads, each in a copy of the caller's context:
    its trace span is their parent), in order of i as a thread comes free; `done[i]` holds each answer. After the
    first call that raises no other starts; the calls running end, then its error is raised."""
    queue, lock, errors = iter(range(count)), threading.Lock(), []

    def work() -> None:
        while True:
            with lock:
                index = None if errors else next(queue, None)
            if index is None:
                return
            try:
                answer = call(index)
            except BaseException as error:  # re-raised below, in the caller's thread
                with lock:
                    errors.append(error)
                return
            with lock:
                done[index] = answer
    if in_flight <= 1:
        work()
    else:
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(work,), name=f"faasgd-launch-{i}")
                   for i in range(min(in_flight, count))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]


def train_call(store: ParameterStore, request: TrainRequest, call_id: str, relaunch: Relaunch | None = None,
               budget: CallBudget = UNLIMITED, local_store_url: str | None = None, clock: CallClock | None = None,
               slow: str | None = None) -> dict:
    """One invocation of a worker: the whole worker (loop) or one epoch (per-iteration). `relaunch`
    invokes a worker again: the next epoch, this work handed off, a lost peer. The job's record holds no
    store password: the store and the node-local cache are this process's own (`store`, `local_store_url`).
    `clock`: the call's, from its entry (else from here, cold when it is this process's first call). `slow`: the
    call's X-Chaos-Slow header, slowing the worker it names when the job's config slows none (worker/straggler.py)."""
    clock = clock or CallClock.begin(cold=replica_cache.first_call())
    # the job's config says how long to ride out an outage; until it is read, STORE_OUTAGE's default (30 s)
    config, meta = retry_call(lambda: job.read_job(store, request.job_id), STORE_OUTAGE)
    if local_store_url is not None:
        config = config.model_copy(update={"local_store_url": local_store_url})
    config = straggler.from_header(config, slow)
    if request.worker_id >= config.number_of_workers:
        raise ConfigError("worker_id", f"must be below number_of_workers={config.number_of_workers}, "
                                       f"got {request.worker_id}")
    worker_store = tracing.traced_store(replica_cache.training_store(config, store))  # a span per round trip
    then = None if relaunch is None else (lambda iteration: relaunch(request.next(iteration)))
    peers = None if relaunch is None else looking_after(store, request, config, meta, relaunch)
    per_iteration = config.invocation_mode == "per-iteration"
    call = Call(config, worker_store, request.job_id, request.worker_id, call_id,
                iteration=request.iteration if per_iteration else 0, loader=replica_cache.load_shard, budget=budget,
                chain=then, on_heartbeat=peers, clock=clock)
    with replica_cache.training_call() as ended:
        answer = run_iteration(call) if per_iteration else run_loop_call(call)
        ended["worker"] = answer.get("state") in job.WORKER_ENDED_STATES  # its data is not needed here any more
        return answer


def looking_after(store: ParameterStore, request: TrainRequest, config: TrainConfig, meta: dict,
                  relaunch: Relaunch) -> Callable[[], None]:
    """What a worker does at its heartbeats: every SUPERVISE_EVERY_S, look after the other workers."""
    last = [time.monotonic()]

    def beat() -> None:
        if time.monotonic() - last[0] < supervise.SUPERVISE_EVERY_S:
            return
        last[0] = time.monotonic()
        try:
            supervise.supervise(store, request.job_id, config, meta, relaunch, skip=request.worker_id)
        except FaasgdError as error:  # looking after others never stops this worker's training
            log.warning("job %s worker %d: supervising the others failed: %s", request.job_id, request.worker_id, error)

    return beat


def run_single(store: ParameterStore, config: TrainConfig, job_id: str, budget: CallBudget = UNLIMITED,
               relaunch: Relaunch | None = None, clock: CallClock | None = None) -> dict:
    """Single mode: the one worker trains here; the job's result record. A call that must stop early (its
    deadline, SIGTERM) hands the worker to `relaunch` (emnist-train resumes it) and answers at once."""
    try:
        with replica_cache.training_call() as ended:
            run_worker(Call(config, replica_cache.training_store(config, store), job_id, 0,
                            loader=replica_cache.load_shard, budget=budget, clock=clock or CallClock.begin()))
            ended["worker"] = True
    except HandOff as stop:
        if relaunch is None:
            raise
        relaunch(TrainRequest(job_id, 0, 0, config.store))
        return {**result.missing(job_id, None), "state": "running", "handed_off": True, "reason": str(stop)}
    return store.get_record(job_id, keys.RESULT) or ending.write_result(store, job_id, error="no result written")

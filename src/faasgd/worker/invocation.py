"""One invocation of a worker, in either mode: take its lease, resume it from its record, train, hand off.

Both modes resume a worker from its record (progress.py), which the store writes with each push, so
no applied step is ever trained again:
- loop: one call trains the worker to the job's stop rule (lease `lease:<w>:loop`);
- per-iteration: call k trains epoch k (lease `lease:<w>:<k>`), then chains call k + 1; a call for
  an epoch already trained is a duplicate, one for an epoch not yet reached an error.
A call ends early, at a push boundary, when its budget says so (its deadline is near, its replica is
shutting down): it releases its lease and `chain`s a call of the same work, which resumes where it
stopped (hand-off). A call that finds another invocation owns the worker ends at once (Superseded).
Answers: {"job_id", "worker_id", "iteration", "duplicate", "handed_off", "next_iteration", "state", "reason"}.
Every call is handed over as one `Call` (which worker of which job, what loads its data, when it must stop, the
platform's hooks) and takes `make`, the loader of the worker's trainer (a Worker, protocol.py): the caller picks it
by the job's `algorithm` (faasgd.functions.workloads); nothing here knows an algorithm.

    run_loop_call(Call(config, store, job_id, worker_id, call_id, loader=replica_cache.load_shard), make=make)
"""

from __future__ import annotations

import logging
import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from faasgd import data, job
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError, JobNotFound, StateLost
from faasgd.profile import WorkerProfile
from faasgd.retry import STORE_OUTAGE, retry_call
from faasgd.worker.call_clock import CallClock
from faasgd.worker.budget import UNLIMITED, CallBudget, HandOff, Superseded
from faasgd.worker.ending import end_worker
from faasgd.worker.lease import Lease
from faasgd.worker.progress import WorkerProgress
from faasgd.worker.protocol import Worker, WorkerLoader
from faasgd.store import ParameterStore, keys

log = logging.getLogger("faasgd.worker")
Chain = Callable[[int], None]  # invoke the worker again, for the given iteration
T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One invocation of a worker as its caller hands it over: which worker of which job, and what the call has."""

    config: TrainConfig  # the job's, read from its record
    store: ParameterStore  # this process's own client (the job's record holds no password)
    job_id: str
    worker_id: int
    call_id: str = ""  # the platform's X-Call-Id ("" without one: a direct run, a POST without the header)
    iteration: int = 0  # per-iteration mode: the epoch this call trains (loop and single mode: 0)
    loader: Callable[..., data.Shard] = data.load_shard  # or a warm replica's caching wrapper of it
    budget: CallBudget = UNLIMITED  # when the call must stop early (its deadline is near, SIGTERM)
    chain: Chain | None = None  # invoke the same worker again (the next epoch, this work handed off)
    on_heartbeat: Callable[[], None] | None = None  # also called at each heartbeat (looking after the others)
    clock: CallClock = field(default_factory=CallClock.begin)  # the call's, from its entry


def starting(config: TrainConfig, read: Callable[[], T]) -> T:
    """A call's first store reads (its lease, its record), ridden out over an outage like every later one
    (within store_timeout_s): a call that starts while the store restarts waits for it instead of failing the
    worker. Taking the lease again after a lost reply is safe: the lease then holds this Lease's nonce, and
    Lease.acquire takes it as its own."""
    return retry_call(read, STORE_OUTAGE.within(config.store_timeout_s))


def answer(call: Call, *, reason: str, duplicate: bool = False, handed_off: bool = False,
           next_iteration: int | None = None, state: str | None = None) -> dict:
    return {"job_id": call.job_id, "worker_id": call.worker_id, "iteration": call.iteration, "duplicate": duplicate,
            "handed_off": handed_off, "next_iteration": next_iteration, "state": state, "reason": reason}


def resume(call: Call) -> WorkerProgress:
    """The worker's progress from its record and its resource stats (after finishing a half-applied push), owned
    by this call."""
    store, job_id, worker_id = call.store, call.job_id, call.worker_id
    store.recover_worker(job_id, worker_id)
    record, resources = keys.progress_name(worker_id), keys.resources_name(worker_id)
    found = store.get_records(job_id, [record, resources])
    progress = WorkerProgress.fresh(worker_id, call.config.seed) if found[record] is None \
        else WorkerProgress.from_record(found[record])
    progress.resources = found[resources] or {}
    progress.owner = f"{call.call_id or 'call'}#{uuid.uuid4().hex[:8]}"  # unique even when a call is delivered twice
    progress.invocations += 1
    return progress


def start(call: Call, progress: WorkerProgress, make: WorkerLoader) -> Worker:
    config = call.config
    trainer = make(config, call.store, call.job_id, progress, call.loader, call.budget)
    trainer.on_heartbeat = call.on_heartbeat
    trainer.resources_written = progress.resources  # as read back by resume: stored already
    trainer.heartbeat(force=True)
    if progress.step % config.n_fetch:  # resuming between fetches: the epoch's loop would not fetch first
        trainer.fetch()
    log.info("job %s worker %d: training on %d rows from epoch %d step %d (%s, %d workers, %s, call %d)", call.job_id,
             progress.worker_id, progress.shard_size, progress.epoch, progress.epoch_step, config.dataset,
             config.number_of_workers, config.invocation_mode, progress.invocations)
    return trainer


def train(trainer: Worker, epochs: int | None = None) -> bool:
    """Train whole epochs (at most `epochs`); True when the worker reached its stop rule."""
    done, stopped = 0, False
    while not stopped and (epochs is None or done < epochs):
        if trainer.budget.draining() or trainer.has_pushed:  # never hand off before any progress
            trainer.check_budget(trainer.period_s + trainer.eval_s)
        stopped = not trainer.run_epoch() or trainer.end_of_epoch()
        done += 1
    trainer.end_call()  # a clean end: what must outlive the call is kept (the residual, faasgd.downpour.residual)
    return stopped


def _run(call: Call, progress: WorkerProgress, make: WorkerLoader, epochs: int | None = None) -> bool:
    """Start the worker and train; a failure is recorded (it fails the job) and re-raised; at the stop rule
    the worker ends. True when it reached its stop rule. Every call's figures (its resources, its billed
    time, its CPU) reach the worker's record: a call that ends cleanly writes it once more after its profile's
    end. The call is in flight in this process from here to its end (its CPU's clock, call_cpu.py)."""
    trainer = None
    config, store, job_id, clock = call.config, call.store, call.job_id, call.clock
    progress.begin_call(clock)  # its interval and its billing from the call's entry (clock anchored by the caller)
    profile = WorkerProfile.start(config.profile_hz, progress, job_id)  # its resources, from before the data loads
    clock.cpu.enter()
    clock.cpu.watch(profile)  # the sampler's thread is the call's
    try:
        try:
            trainer = start(call, progress, make)
            profile.watch(trainer.comms)
            clock.cpu.watch(trainer.comms)  # so is its communication thread
            stopped = train(trainer, epochs)
        except HandOff:
            close_call(trainer, profile, store)
            raise
        except Superseded:
            raise
        except BaseException as error:
            progress.state, progress.error = "failed", f"worker {progress.worker_id}: {error}"
            profile.finish(store)
            if isinstance(error, (JobNotFound, StateLost)):  # the job existed when this call began
                progress.error = f"worker {progress.worker_id}: {lost(store, job_id, error)}"
                end_worker(store, job_id, config, progress, trainer)
                raise StateLost(store.url, progress.error) from error
            end_worker(store, job_id, config, progress, trainer)
            raise
        if stopped:
            progress.state = "finished"
            profile.finish(store)  # the final record carries the call's last figures
            end_worker(store, job_id, config, progress, trainer)
            profile.ended(store)
        else:
            close_call(trainer, profile, store)
        return stopped
    finally:
        if trainer is not None:
            trainer.comms.close()  # the worker's communication thread ends with the call
        profile.finish(store)  # a hand-off or an epoch's end: its series still kept
        clock.cpu.leave()


def close_call(trainer: Worker | None, profile: WorkerProfile, store: ParameterStore) -> None:
    """A call that ends cleanly before the worker does (an epoch in per-iteration mode, a hand-off): its profile
    ends and the worker's record is written once more, so the next call goes on from every figure of this one
    (its resources, its billed time up to here). Superseded if another invocation wrote a newer record."""
    profile.finish(store)
    if trainer is not None:
        trainer.save()


def note_call(call: Call, kind: str) -> None:
    """A call that trained nothing (a duplicate delivery): an event, so the job's result counts and bills it too
    (best effort: a duplicate never fails)."""
    try:
        call.store.append_event(call.job_id, {"event": "call", "kind": kind, "duplicate": True,
                                              "worker_id": call.worker_id, **call.clock.billed()})
    except Exception as error:  # the store may be gone: nothing to record it in
        log.warning("job %s worker %d: duplicate call not recorded: %s", call.job_id, call.worker_id, error)


def lost(store: ParameterStore, job_id: str, error: BaseException) -> str:
    """Mark the job's state as lost in the store (best effort); the reason."""
    try:
        return job.mark_lost(store, job_id, str(error))
    except Exception:  # the store may be the thing that is gone
        return f"the store lost the job's state ({error})"


def beats(*callbacks: Callable[[], None] | None) -> Callable[[], None]:
    """One heartbeat callback calling each of `callbacks` given."""
    given = [c for c in callbacks if c is not None]
    return lambda: [c() for c in given] and None


def run_worker(call: Call, *, make: WorkerLoader) -> dict:
    """Train the call's worker to its stop rule in this process (no lease: single mode, tests); its record."""
    progress = resume(call)
    starting(call.config, lambda: call.clock.anchor(call.store))
    _run(call, progress, make)
    return progress.record(progress.finished_at)


def run_loop_call(call: Call, *, make: WorkerLoader) -> dict:
    """One loop-mode invocation: the worker to its stop rule, unless another call has or holds it."""
    config, store = call.config, call.store
    lease = Lease(store, call.job_id, call.worker_id, "loop", call.call_id, config.lease_s)
    if not starting(config, lease.acquire):
        note_call(call, "duplicate")
        return answer(call, duplicate=True, reason="another delivery holds this worker's lease")
    try:
        progress = starting(config, lambda: resume(call))
        if progress.state != "running":
            note_call(call, "duplicate")
            return answer(call, duplicate=True, state=progress.state, reason=f"this worker already {progress.state}")
        starting(config, lambda: call.clock.anchor(store))
        _run(leased(call, lease), progress, make)
    except HandOff as stop:
        lease.release()
        return _hand_off(call, str(stop))
    except Superseded as lost:
        return answer(call, duplicate=True, reason=str(lost))
    finally:
        lease.release()
    return answer(call, state=progress.state, reason="trained to the stop rule")


def run_iteration(call: Call, *, make: WorkerLoader) -> dict:
    """One per-iteration invocation: epoch `call.iteration` of the worker, once however often it is delivered."""
    config, store, iteration = call.config, call.store, call.iteration
    lease = Lease(store, call.job_id, call.worker_id, iteration, call.call_id, config.lease_s)
    if not starting(config, lease.acquire):
        note_call(call, "duplicate")
        return answer(call, duplicate=True, reason="another delivery holds this iteration's lease")
    try:
        progress = starting(config, lambda: resume(call))
        if progress.state != "running" or progress.epoch > iteration:
            note_call(call, "duplicate")
            return answer(call, duplicate=True, state=progress.state,
                          reason=f"iteration already trained (the worker is at epoch {progress.epoch}, {progress.state})")
        if progress.epoch < iteration:
            raise ConfigError("iteration", f"worker {call.worker_id} has trained {progress.epoch} epoch(s); "
                                           f"cannot run iteration {iteration} before them")
        starting(config, lambda: call.clock.anchor(store))
        stopped = _run(leased(call, lease), progress, make, epochs=1)
    except HandOff as stop:
        lease.release()
        return _hand_off(call, str(stop))
    except Superseded as lost:
        return answer(call, duplicate=True, reason=str(lost))
    finally:
        lease.release()
    if stopped:
        return answer(call, state=progress.state, reason="stop rule reached")
    if call.chain is not None:
        call.chain(iteration + 1)
    return answer(call, next_iteration=iteration + 1, state=progress.state, reason="trained one epoch")


def leased(call: Call, lease: Lease) -> Call:
    """The call whose heartbeats also renew its lease."""
    return dataclasses.replace(call, on_heartbeat=beats(lease.renew, call.on_heartbeat))


def _hand_off(call: Call, reason: str) -> dict:
    """The call stopped at a push boundary: invoke the same work again; it resumes from the record."""
    log.info("job %s worker %d: handing off (%s)", call.job_id, call.worker_id, reason)
    if call.chain is not None:
        call.chain(call.iteration)
    return answer(call, handed_off=True, next_iteration=call.iteration, reason=reason)

"""Downpour's exchange with the store: fetch the global parameters, push the accumulated update, take results in.

Right after a push the weights it wrote serve the next fetch; a copy older than our own last push is ignored
(reads are monotonic in the version). Operations go through the exchange's StoreThread (comm.py) as its schedule
says (schedule.py: blocking, background, coalesce) and are taken in at synchronisation points (`sync`).
The worker (worker.py) holds one ParameterExchange, which keeps the state it reads and writes: the local weights
and the `base` they are built on (their difference is the update not pushed yet), `fetched` and `sending`, the
versions and step counts, the error-feedback residual, the store thread (`comms`) and the operation in flight
(`op`). Of the worker it uses what Exchanging names: its store round trips (retried), its record and its clock.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

from faasgd.config import TrainConfig
from faasgd.downpour import comm
from faasgd.downpour import residual as feedback
from faasgd.downpour.schedule import schedule_for
from faasgd.downpour.stop_rule import StopRule
from faasgd.store import ParameterStore, PushId, keys, push_codec
from faasgd.worker.budget import Superseded
from faasgd.worker.progress import WorkerProgress


class Exchanging(Protocol):
    """What the exchange uses of the worker it serves (DownpourWorker)."""

    store: ParameterStore
    job_id: str
    progress: WorkerProgress
    stop_rule: StopRule  # told which push's parameters to check

    def clock(self) -> float: ...

    def retry(self, call: Callable[[], Any]) -> Any: ...  # a store round trip, retried across an outage

    def snapshot(self, pushes: int | None = None) -> dict: ...  # the worker's record as of now


class ParameterExchange:
    """The worker's store operations (fetch, push), the synchronisation points that take their results in, and the
    parameters and counts they keep."""

    def __init__(self, config: TrainConfig, size: int, worker: Exchanging):
        self.worker = worker
        # The local copy is the global parameters it was built on plus the steps not yet handed to a push: `weights`
        # and `base`, whose difference is that update (`pending`), taken only at a push and when new parameters are
        # taken in, so a step adds its update to one buffer, not two
        self.weights = np.zeros(size, np.float32)  # local copy: global + own unpushed steps (none before a fetch)
        self.base = np.zeros(size, np.float32)  # what the local copy is built on: weights - base is not pushed yet
        self.fetched = np.empty(size, np.float32)  # last global parameters read (or written by our push)
        self.sending = np.zeros(size, np.float32)  # the update a push in flight sends
        self.codec = push_codec.parse_codec(config.push_codec)  # how pushes travel (f32, f16, topk:F)
        # error feedback: what compressed pushes left out, sent with later ones (kept with the checkpoint at a
        # clean end of the call: downpour/residual.py; load_worker reads it back). As in deep gradient compression it
        # is not in the local copy: a fetch makes that global + pending again
        self.residual = np.zeros(size, np.float32) if self.codec.compresses else None
        self.residual_kept = True  # the stored record names the residual as it is now (or zeros before any push)
        self.base_version = 0  # global version of the parameters our weights are built on (the last taken in)
        self.last_push_version = 0  # global version right after our last push
        self.unpushed_steps = 0
        self.pushed_snapshot = False  # our last push (in flight, or its result in `fetched`) and no step since
        self.schedule = schedule_for(config.communication)  # blocking, background or coalesce (schedule.py)
        self.comms = comm.StoreThread(self.schedule.background)
        self.push_due = False  # coalesce: a push point passed while an operation was in flight
        self.fetch_wanted = False  # coalesce: a fetch point left to the put-off push's result
        self.op: comm.Op | None = None  # the store operation submitted and not yet taken in (sync)
        self.fetched_once = False  # the first fetch of an invocation waits for its result
        # other workers' steps (comm.py) in: the parameters our weights are built on; the newest
        # parameters whose steps we know (our last push's); those our oldest pending step was computed from
        self.snap_others = self.known_others = self.base_others = 0
        self.period_s = 0.0  # seconds between pushes, smoothed: what the budget must leave room for
        self.last_push_at: float | None = None  # when this call's last push landed (None: none yet)

    @property
    def pending(self) -> np.ndarray:
        """The update not yet handed to a push (a new array): the local weights less what they are built on."""
        return self.weights - self.base

    def stepped(self) -> None:
        """A step was added to `weights`: one more for the next push."""
        if self.unpushed_steps == 0:  # the oldest step of the next push: computed from these parameters
            self.base_others = self.snap_others
        self.unpushed_steps += 1
        self.pushed_snapshot = False

    def keep_residual(self) -> None:
        """At a clean end of the call, once its last push has landed: keep the residual with the checkpoint
        (downpour/residual.py). Superseded if the store refuses the record (another invocation is further on)."""
        self.sync()
        if self.residual is None or self.residual_kept:
            return
        worker = self.worker
        store, job_id, progress = worker.store, worker.job_id, worker.progress
        name = keys.residual_name(progress.worker_id, progress.pushes, progress.owner)
        data = feedback.to_bytes(self.residual)
        record = worker.snapshot()
        record["residual"] = name
        if not worker.retry(lambda: feedback.keep(store, job_id, progress.worker_id, name, data, record)):
            raise Superseded(f"worker {progress.worker_id}: another invocation wrote a newer record")
        progress.downpour.residual, self.residual_kept = name, True

    def fetch(self, wait: bool = False) -> None:
        """Read the global parameters; the local copy becomes global + unpushed updates (when taken in).

        Right after a push the weights that push wrote are the newest version we can know of
        without asking again, so they serve the fetch (one round trip less per period). A copy
        older than our own last push (a node-local cache not yet refreshed) would undo our own
        applied steps, so it is ignored: reads are monotonic in the version. In the background the
        fetch is taken in at the next synchronisation point; the first of an invocation, and one with
        `wait`, at once.
        """
        self.worker.progress.downpour.fetches += 1
        if not wait and self.schedule.serves_fetch(self):  # coalesce: an operation in flight serves it
            return
        if self.pushed_snapshot:
            if self.op is not None:  # that push is in flight: its result is this fetch
                self.op.merge = True
            else:
                self._merge(self.last_push_version, self.known_others)
        else:
            self.sync()
            own = self.worker.progress.downpour.pushed_steps
            self._submit(comm.Op(comm.FETCH, merge=True, own_steps=own),
                         lambda: self.worker.store.fetch(self.worker.job_id, out=self.fetched))
        if wait or not self.fetched_once:
            self.sync()
            self.fetched_once = True

    def push(self, due: bool = False) -> None:
        """Hand the accumulated update over to a push with the worker's next number and its record (a checkpoint).

        `due`: a push point of the period; with `coalesce`, one reached while an operation is in flight
        is put off (the steps go on accumulating) to the first step after that operation has landed."""
        if self.unpushed_steps == 0:
            return
        if due and self.schedule.puts_off_push(self):  # coalesce: one in flight, the steps go on accumulating
            return
        self.push_due = False
        self.sync()  # one operation in flight at most: the previous one lands first
        progress, seq = self.worker.progress, self.worker.progress.pushes + 1
        record = self.worker.snapshot(pushes=seq)
        record["pushed_steps"] = progress.step  # this push holds every step so far
        np.subtract(self.weights, self.base, out=self.sending)  # the update since the last push (or take-in)
        np.copyto(self.base, self.weights)  # nothing is pending now
        self.pushed_snapshot, self.unpushed_steps = True, 0
        delta, push_id = self.sending, PushId(progress.worker_id, seq)
        if self.residual is not None:  # sending += residual; the push carries part, the residual keeps the rest
            delta = self.codec.encode(self.sending, self.residual)
            record["residual"] = ""  # kept only at the call's clean end (keep_residual; downpour/residual.py)
        merge, self.fetch_wanted = self.fetch_wanted, False

        def call():
            return self.worker.store.push_update(self.worker.job_id, delta, out=self.fetched, push_id=push_id, record=record)
        if self.residual is not None:  # once applied, the blob an earlier record named is deleted
            pushed, previous = call, progress.downpour.residual
            call = lambda: feedback.push_then_drop(self.worker.store, self.worker.job_id, pushed, previous)  # noqa: E731
        self._submit(comm.Op(comm.PUSH, merge=merge, own_steps=progress.step, seq=seq, base_others=self.base_others,
                             payload_bytes=push_codec.payload_bytes(delta)), call)

    def _submit(self, op: comm.Op, call: Callable) -> None:
        self.op = op
        self.comms.submit(lambda: self.worker.retry(call))
        self.schedule.after_submit(self)

    def sync(self) -> None:
        """Wait for the operation in flight, if any, and take its result in (its error is raised here)."""
        op, self.op = self.op, None
        if op is None:
            return
        try:
            outcome = self.comms.collect()
        finally:
            self.worker.progress.downpour.comm_wait_s += self.comms.take_wait()
        if op.kind == comm.PUSH:
            self._pushed(op, outcome)
        else:
            self.worker.progress.downpour.fetch_bytes += self.fetched.nbytes
            if op.merge:
                others = None if outcome.steps is None else outcome.steps - op.own_steps
                self._merge(outcome.version, others)

    def take_in_landed(self) -> None:
        """coalesce: an operation that has landed is taken in before the next step (no waiting), so the
        worker steps on new parameters a round trip after they were read, not a push period later."""
        if self.op is not None and not self.comms.in_flight:
            self.sync()

    def _merge(self, version: int, others: int | None) -> None:
        """The local copy becomes the parameters in `fetched` (of `version`) plus our steps not in them."""
        if version < self.last_push_version:
            return
        self.base_version = version
        self.snap_others = self.known_others if others is None else others  # unknown: at most our last push's
        np.subtract(self.weights, self.base, out=self.weights)  # the steps not pushed yet ...
        np.add(self.weights, self.fetched, out=self.weights)  # ... on the parameters taken in
        np.copyto(self.base, self.fetched)  # a copy: `fetched` may serve again (a fetch point right after a push)

    def _pushed(self, op: comm.Op, push) -> None:
        progress = self.worker.progress
        if not push.applied:
            raise Superseded(f"worker {progress.worker_id}: push {op.seq} was applied by another invocation")
        pushed_now = op.own_steps - progress.downpour.pushed_steps  # minibatches this push carried
        progress.pushes, progress.downpour.pushed_steps = op.seq, op.own_steps
        if push.steps is not None:
            self.worker.stop_rule.note_check(push.version, push.steps, pushed_now, self.fetched)
        if self.residual is not None:  # the stored record names no residual now (kept at the call's end)
            progress.downpour.residual, self.residual_kept = "", False
        progress.downpour.conflicts += push.conflicts  # ours alone: the push reports what it saw
        progress.downpour.push_bytes += op.payload_bytes  # the update handed over (push_codec); the weights come back with it
        progress.downpour.fetch_bytes += self.fetched.nbytes
        if push.steps is not None:  # staleness: other workers' steps applied since our oldest step's parameters
            self.known_others = push.steps - op.own_steps
            progress.downpour.record_staleness(self.known_others - op.base_others)
        self.last_push_version = push.version
        now = self.worker.clock()
        if self.last_push_at is not None:
            self.period_s = now - self.last_push_at if not self.period_s else 0.8 * self.period_s + 0.2 * (
                now - self.last_push_at)
        self.last_push_at = now
        if op.merge:
            self._merge(push.version, self.known_others if push.steps is not None else None)

"""Downpour's exchange with the store: fetch the global parameters, push the accumulated update, take results in.

Right after a push the weights it wrote serve the next fetch; a copy older than our own last push is ignored
(reads are monotonic in the version). Operations go through the worker's StoreThread (comm.py) as its schedule
says (schedule.py: blocking, background, coalesce) and are taken in at synchronisation points (`sync`).
ParameterExchange is a mixin of DownpourWorker (worker.py), which holds the state it reads and writes: the
local weights and the `base` they are built on (their difference is the update not pushed yet), `fetched` and
`sending`, the versions and step counts, the store thread (`comms`) and `op`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from faasgd.downpour import comm
from faasgd.downpour import residual as feedback
from faasgd.store import PushId, push_codec
from faasgd.worker.budget import Superseded


class ParameterExchange:
    """The worker's store operations (fetch, push) and the synchronisation points that take their results in."""

    def fetch(self, wait: bool = False) -> None:
        """Read the global parameters; the local copy becomes global + unpushed updates (when taken in).

        Right after a push the weights that push wrote are the newest version we can know of
        without asking again, so they serve the fetch (one round trip less per period). A copy
        older than our own last push (a node-local cache not yet refreshed) would undo our own
        applied steps, so it is ignored: reads are monotonic in the version. In the background the
        fetch is taken in at the next synchronisation point; the first of an invocation, and one with
        `wait`, at once.
        """
        self.progress.fetches += 1
        if not wait and self.schedule.serves_fetch(self):  # coalesce: an operation in flight serves it
            return
        if self.pushed_snapshot:
            if self.op is not None:  # that push is in flight: its result is this fetch
                self.op.merge = True
            else:
                self._merge(self.last_push_version, self.known_others)
        else:
            self.sync()
            own = self.progress.pushed_steps
            self._submit(comm.Op(comm.FETCH, merge=True, own_steps=own),
                         lambda: self.store.fetch(self.job_id, out=self.fetched))
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
        progress, seq = self.progress, self.progress.pushes + 1
        record = self.snapshot(pushes=seq)
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
            return self.store.push_update(self.job_id, delta, out=self.fetched, push_id=push_id, record=record)
        if self.residual is not None:  # once applied, the blob an earlier record named is deleted
            pushed, previous = call, progress.residual
            call = lambda: feedback.push_then_drop(self.store, self.job_id, pushed, previous)  # noqa: E731
        self._submit(comm.Op(comm.PUSH, merge=merge, own_steps=progress.step, seq=seq, base_others=self.base_others,
                             payload_bytes=push_codec.payload_bytes(delta)), call)

    def _submit(self, op: comm.Op, call: Callable) -> None:
        self.op = op
        self.comms.submit(lambda: self.retry(call))
        self.schedule.after_submit(self)

    def sync(self) -> None:
        """Wait for the operation in flight, if any, and take its result in (its error is raised here)."""
        op, self.op = self.op, None
        if op is None:
            return
        try:
            outcome = self.comms.collect()
        finally:
            self.progress.comm_wait_s += self.comms.take_wait()
        if op.kind == comm.PUSH:
            self._pushed(op, outcome)
        else:
            self.progress.fetch_bytes += self.fetched.nbytes
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
        progress = self.progress
        if not push.applied:
            raise Superseded(f"worker {progress.worker_id}: push {op.seq} was applied by another invocation")
        pushed_now = op.own_steps - progress.pushed_steps  # minibatches this push carried
        progress.pushes, progress.pushed_steps = op.seq, op.own_steps
        if push.steps is not None:
            self.stop_rule.note_check(push.version, push.steps, pushed_now, self.fetched)
        if self.residual is not None:  # the stored record names no residual now (kept at the call's end)
            progress.residual, self.residual_kept = "", False
        progress.conflicts += push.conflicts  # ours alone: the push reports what it saw
        progress.push_bytes += op.payload_bytes  # the update handed over (push_codec); the weights come back with it
        progress.fetch_bytes += self.fetched.nbytes
        if push.steps is not None:  # staleness: other workers' steps applied since our oldest step's parameters
            self.known_others = push.steps - op.own_steps
            progress.record_staleness(self.known_others - op.base_others)
        self.last_push_version = push.version
        now = self.clock()
        if self._last_push_at is not None:
            self.period_s = now - self._last_push_at if not self.period_s else 0.8 * self.period_s + 0.2 * (
                now - self._last_push_at)
        self._last_push_at = now
        if op.merge:
            self._merge(push.version, self.known_others if push.steps is not None else None)

"""A worker's communication with the store, off the critical path as in Downpour (config `communication`).

`StoreThread` runs a worker's store operations (fetches and pushes) one at a time, in order:
- background: on one thread of its own (a ThreadPoolExecutor with one worker), while the worker
  trains on; at most one operation is in flight, so the store sees a worker's pushes in order;
- blocking: inline, when submitted (the worker waits for every round trip).

The worker (worker.py) takes in an operation's result only at a synchronisation point: when it
submits the next operation, or when it drains (before a hand-off, a record write, an evaluation,
the end). Its rule is deterministic, whatever the thread's timing: there the local weights become
the result (the fetched weights, or those a push wrote, when a fetch point claimed it) plus the
worker's own steps not in that result. So a push hands its accumulated update over and training goes
on into a fresh accumulator; a fetch is submitted and training goes on with the local copy; a worker
waits only for the first fetch of an invocation, for an operation still in flight when it submits
the next one, and at a drain. An error of the background call (StoreError, a superseded push) is
raised at that synchronisation point, in the training thread.

Staleness of a push, in minibatch steps: how many steps of other workers the store applied between
the parameters the push's oldest step was computed from and the push itself. Each fetch and push
tells the steps the weights hold (the writers' `pushed_steps` summed, store/push.py); minus the
worker's own pushed steps (`Op.own_steps`), that is the other workers' steps in those parameters. The
worker notes them for the parameters each of its pushes' oldest step was computed from
(`Op.base_others`); at the push, staleness = other workers' steps in its result - that number.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from faasgd.call_cpu import thread_cpu_s

FETCH, PUSH = "fetch", "push"


@dataclass
class Op:
    """One store operation submitted and not yet taken in by the worker."""

    kind: str  # FETCH or PUSH
    merge: bool  # take the result into the local weights (a fetch; a push once a fetch point claimed it)
    own_steps: int = 0  # the worker's pushed steps the result holds (a fetch: as submitted; a push: with it)
    seq: int = 0  # a push's number
    base_others: int = 0  # a push: other workers' steps in the parameters its oldest step was computed from
    payload_bytes: int = 0  # a push: bytes of the update it hands over (store/push_codec.py)


class StoreThread:
    """Runs a worker's store operations: at most one outstanding, collected in order; time waited kept."""

    def __init__(self, background: bool, clock: Callable[[], float] = time.perf_counter):
        self.background = background
        self.clock = clock
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faasgd-comm") if background else None
        self._future: Future | None = None
        self._result: Any = None  # blocking: the result of the call made at submit
        self._waited = 0.0  # seconds waited since the last take_wait()
        self._closed_cpu_s: float | None = None  # its thread's CPU-seconds, as the thread read them last (close)

    @property
    def thread_ids(self) -> list[int]:
        """Idents of the store thread's own thread (none when blocking, or before its first operation): the
        resource profile counts their CPU and store bytes as the worker's."""
        threads = list(self._pool._threads) if self._pool is not None else []  # one-thread pool, started lazily
        return [t.ident for t in threads if t.ident is not None]

    def thread_cpu_s(self) -> float:
        """CPU-seconds its own thread has used in its whole life (0.0 when blocking or not started): read on the
        thread's CPU clock while it runs; once closed, what the thread read as its last operation."""
        if self._closed_cpu_s is not None:
            return self._closed_cpu_s
        return sum(thread_cpu_s(ident) or 0.0 for ident in self.thread_ids)

    @property
    def in_flight(self) -> bool:
        """An operation was submitted and its call has not returned yet (collecting it would wait)."""
        return self._future is not None and not self._future.done()

    @property
    def busy(self) -> bool:
        """An operation was submitted and not yet collected."""
        return self._future is not None

    def submit(self, call: Callable[[], Any]) -> None:
        """Start `call`: on the background thread, or now (blocking, its errors raised here). One at a time."""
        if self.busy:
            raise RuntimeError("a store operation is still in flight: collect it first")
        if self._pool is not None:
            self._future = self._pool.submit(call)
            return
        started = self.clock()
        try:
            result = call()
        finally:
            self._waited += self.clock() - started
        self._future = Future()
        self._future.set_result(result)

    def collect(self) -> Any:
        """The outstanding operation's result, waiting for it (its exception raised here); None if none."""
        future, self._future = self._future, None
        if future is None:
            return None
        started = self.clock()
        try:
            return future.result()
        finally:
            if self.background:
                self._waited += self.clock() - started

    def take_wait(self) -> float:
        """Seconds spent waiting on operations since the last call."""
        waited, self._waited = self._waited, 0.0
        return waited

    def close(self) -> None:
        """Wait for an operation still in flight (its outcome dropped) and stop the thread, which reads its CPU clock
        as its last operation (thread_cpu_s: an ended thread's clock cannot be read). Closing again changes nothing."""
        self._future = None
        if self._pool is None or self._closed_cpu_s is not None:
            return
        self._closed_cpu_s = self._pool.submit(time.thread_time).result() if self.thread_ids else 0.0
        self._pool.shutdown(wait=True)

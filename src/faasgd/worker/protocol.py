"""The interface a call (invocation.py) drives, whatever the worker's algorithm.

Both worker kinds implement it: faasgd.downpour's DownpourWorker and faasgd.lambdaml's SyncWorker. A loader
(WorkerLoader) reads the worker's data and builds its trainer; the caller chooses it by the job's `algorithm`.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, TypeVar, runtime_checkable

import numpy as np

from faasgd import data
from faasgd.config import TrainConfig
from faasgd.store import ParameterStore
from faasgd.worker.budget import CallBudget
from faasgd.worker.progress import WorkerProgress

T = TypeVar("T")


class Comms(Protocol):
    """A worker's communication thread as the call and the resource profile see it."""

    @property
    def thread_ids(self) -> Any: ...  # idents of its own threads: their CPU counts as the worker's

    def thread_cpu_s(self) -> float: ...  # CPU-seconds its threads have used (call_cpu.py), ended ones too

    def close(self) -> None: ...  # its thread ends with the call


@runtime_checkable
class Worker(Protocol):
    """One worker's training over its shard, as one call drives it (invocation.py) and ends it (ending.py).
    isinstance(trainer, Worker) checks that every member is there (not their types)."""

    budget: CallBudget  # when the call must stop
    on_heartbeat: Callable[[], None] | None  # also called at each heartbeat (the lease's renewal)
    period_s: float  # seconds between checkpoints (pushes, rounds), smoothed: what a hand-off leaves room for
    eval_s: float  # seconds the last evaluation took
    comms: Comms  # its store thread (none for the synchronous rounds: an object that does nothing)
    rng: np.random.Generator  # its random state, written to its record at the end
    test: data.Shard  # the test rows: reported only, never a stop rule

    @property
    def has_pushed(self) -> bool: ...  # this call has checkpointed progress (a push, a round): it may hand off

    def retry(self, call: Callable[[], T]) -> T: ...  # a store round trip, retried across an outage

    def heartbeat(self, force: bool = False) -> None: ...

    def fetch(self, wait: bool = False) -> None: ...  # the global parameters, before training resumes mid-period

    def check_budget(self, upcoming_s: float) -> None: ...  # HandOff when the budget says stop

    def run_epoch(self) -> bool: ...  # the rest of the current epoch; False if the job ended meanwhile

    def end_of_epoch(self) -> bool: ...  # record the epoch (evaluated where the trainer's rule says); True to stop

    def end_call(self) -> None: ...  # a clean end of the call: keep what must outlive it

    def save(self) -> None: ...  # write the record between checkpoints; Superseded if the store has newer

    def settle(self) -> None: ...  # take in what is in flight as the worker ends

    def evaluate(self, weights: np.ndarray, rows: data.Shard | None = None) -> float: ...  # validation accuracy


class WorkerLoader(Protocol):
    """Reads a worker's shard (through `loader`) and builds its trainer."""

    def __call__(self, config: TrainConfig, store: ParameterStore, job_id: str, progress: WorkerProgress,
                 loader: Callable[..., data.Shard] = ..., budget: CallBudget = ...) -> Worker: ...

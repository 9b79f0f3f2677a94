"""Downpour's stop rule between epoch ends: the parameters a push returns, checked every `eval_every_samples`.

The stop rule is checked every `eval_every_samples` samples of all workers (stop_rule_period), not at each
worker's epoch ends: the worker whose push carries the job's steps past a multiple of it evaluates the
parameters that push returned and, at the target, keeps exactly them as the job's model. So the crossing is
found at the same points whatever the number of workers, and samples_to_target compare like with like.
The worker (worker.py) holds a StopRule, which keeps its own state (the period, the check a push asked for,
whether this worker crossed) and is handed the worker it checks for (Checked: what it uses of it).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

from faasgd import data, job
from faasgd.job import model_file
from faasgd.config import TrainConfig
from faasgd.store import ParameterStore
from faasgd.worker.progress import WorkerProgress


class Checked(Protocol):
    """What the stop rule reads and sets of the worker it serves (DownpourWorker)."""

    config: TrainConfig
    store: ParameterStore
    job_id: str
    progress: WorkerProgress
    shard: data.Shard  # its `total`: the job's training rows
    validation: data.Shard
    test: data.Shard
    eval_s: float  # seconds an evaluation takes: what the budget leaves room for (raised here)

    def clock(self) -> float: ...

    def retry(self, call: Callable[[], Any]) -> Any: ...

    def evaluate(self, weights: np.ndarray, rows: data.Shard | None = None) -> float: ...


class StopRule:
    """The checks between epoch ends: note which push's parameters to check, check them on the training thread."""

    def __init__(self, config: TrainConfig, training_rows: int):
        self.batch_size = config.batch_size
        self.check_every = stop_rule_period(config, training_rows)  # samples of all workers between checks
        self.check: tuple[int, int, np.ndarray] | None = None  # (version, samples, parameters) a push asks to check
        self.crossed = False  # this worker found the target mid-epoch: it stops at its next fetch point

    def note_check(self, version: int, steps: int, pushed_now: int, fetched: np.ndarray) -> None:
        """When this push carried the job's samples past a multiple of check_every, the parameters it returned
        (`fetched`, copied) are to be checked against the target (check_target, on the training thread)."""
        batch = self.batch_size
        if (steps * batch) // self.check_every > ((steps - pushed_now) * batch) // self.check_every:
            self.check = (version, steps * batch, fetched.copy())

    def check_target(self, worker: Checked) -> None:
        """The stop rule between epoch ends: evaluate the parameters a push asked to check; at the target keep
        exactly them as the job's model (model_file.keep_crossing: the first crossing wins) and stop soon."""
        if self.check is None:
            return
        (version, in_params, weights), self.check = self.check, None
        config, store, job_id, progress = worker.config, worker.store, worker.job_id, worker.progress
        started = worker.clock()
        accuracy = worker.evaluate(weights)
        # what an epoch end's evaluation would take (the validation and the test rows, at this check's rate): the
        # budget's room for one, until this call's own epoch-end evaluation measures it (one worker a round does)
        rows = len(worker.validation.y)
        worker.eval_s = max(worker.eval_s, (worker.clock() - started) * (rows + len(worker.test.y)) / max(1, rows))
        now = progress.now()
        event = {"event": "check", "worker_id": progress.worker_id, "samples": in_params, "accuracy": accuracy, "at": now}
        if accuracy < config.target_accuracy:
            worker.retry(lambda: store.append_event(job_id, event))
            return
        test_accuracy = worker.evaluate(weights, worker.test)  # reported only (the kept model's), never a stop rule
        worker.retry(lambda: store.append_event(job_id, {**event, "test_accuracy": test_accuracy}))
        # the samples in these parameters: their minibatch steps (a short last minibatch of an epoch counted whole),
        # at most what the workers' records say now (those may hold pushes that landed since)
        records = worker.retry(lambda: job.read_progress(store, job_id, config.number_of_workers))
        samples = min(in_params, sum(int((r or {}).get("samples", 0)) for r in records.values()))
        crossing = {"validation_accuracy": accuracy, "at": now, "samples": samples,
                    "epochs": samples / worker.shard.total, "version": version}
        worker.retry(lambda: model_file.keep_crossing(store, job_id, progress.worker_id, weights,
                                                      lambda: test_accuracy, crossing))
        self.crossed = True


def stop_rule_period(config: TrainConfig, training_rows: int) -> int:
    """Samples of all workers between two checks of the stop rule: eval_every_samples, else half the training rows.
    Each check evaluates the validation rows once (Fashion-MNIST's 5,000: about 14 ms here, 7% of one worker's
    epoch of 27,500 rows): checks every quarter of an epoch cost bench/throughput.py's 2-worker job 14% of its
    training samples/s, every half none beyond this machine's noise (docs: honest measures)."""
    return max(1, config.eval_every_samples or training_rows // 2)

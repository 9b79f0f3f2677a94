"""Downpour's stop rule between epoch ends: the parameters a push returns, checked every `eval_every_samples`.

The stop rule is checked every `eval_every_samples` samples of all workers (stop_rule_period), not at each
worker's epoch ends: the worker whose push carries the job's steps past a multiple of it evaluates the
parameters that push returned and, at the target, keeps exactly them as the job's model. So the crossing is
found at the same points whatever the number of workers, and samples_to_target compare like with like.
StopRule is a mixin of DownpourWorker (worker.py), which provides config, store, job_id, progress, shard,
test, fetched, retry and evaluate.
"""

from __future__ import annotations

import numpy as np

from faasgd import job
from faasgd.job import model_file
from faasgd.config import TrainConfig


class StopRule:
    """The checks between epoch ends: note which push's parameters to check, check them on the training thread."""

    check_every: int  # samples of all workers between stop-rule checks (stop_rule_period)
    check: tuple[int, int, np.ndarray] | None = None  # (version, samples, parameters) a push asks to check
    crossed = False  # this worker found the target mid-epoch: it stops at its next fetch point

    def note_check(self, version: int, steps: int, pushed_now: int) -> None:
        """When this push carried the job's samples past a multiple of check_every, the parameters it returned
        (in `fetched`) are to be checked against the target (check_target, on the training thread)."""
        batch = self.config.batch_size
        if (steps * batch) // self.check_every > ((steps - pushed_now) * batch) // self.check_every:
            self.check = (version, steps * batch, self.fetched.copy())

    def check_target(self) -> None:
        """The stop rule between epoch ends: evaluate the parameters a push asked to check; at the target keep
        exactly them as the job's model (model_file.keep_crossing: the first crossing wins) and stop soon."""
        if self.check is None:
            return
        (version, in_params, weights), self.check = self.check, None
        progress = self.progress
        started = self.clock()
        accuracy = self.evaluate(weights)
        # what an epoch end's evaluation would take (the validation and the test rows, at this check's rate): the
        # budget's room for one, until this call's own epoch-end evaluation measures it (one worker a round does)
        rows = len(self.validation.y)
        self.eval_s = max(self.eval_s, (self.clock() - started) * (rows + len(self.test.y)) / max(1, rows))
        now = progress.now()
        event = {"event": "check", "worker_id": progress.worker_id, "samples": in_params, "accuracy": accuracy, "at": now}
        if accuracy < self.config.target_accuracy:
            self.retry(lambda: self.store.append_event(self.job_id, event))
            return
        test_accuracy = self.evaluate(weights, self.test)  # reported only (the kept model's), never a stop rule
        self.retry(lambda: self.store.append_event(self.job_id, {**event, "test_accuracy": test_accuracy}))
        # the samples in these parameters: their minibatch steps (a short last minibatch of an epoch counted whole),
        # at most what the workers' records say now (those may hold pushes that landed since)
        records = self.retry(lambda: job.read_progress(self.store, self.job_id, self.config.number_of_workers))
        samples = min(in_params, sum(int((r or {}).get("samples", 0)) for r in records.values()))
        crossing = {"validation_accuracy": accuracy, "at": now, "samples": samples,
                    "epochs": samples / self.shard.total, "version": version}
        self.retry(lambda: model_file.keep_crossing(self.store, self.job_id, progress.worker_id, weights,
                                                    lambda: test_accuracy, crossing))
        self.crossed = True


def stop_rule_period(config: TrainConfig, training_rows: int) -> int:
    """Samples of all workers between two checks of the stop rule: eval_every_samples, else half the training rows.
    Each check evaluates the validation rows once (Fashion-MNIST's 5,000: about 14 ms here, 7% of one worker's
    epoch of 27,500 rows): checks every quarter of an epoch cost bench/throughput.py's 2-worker job 14% of its
    training samples/s, every half none beyond this machine's noise (docs: honest measures)."""
    return max(1, config.eval_every_samples or training_rows // 2)

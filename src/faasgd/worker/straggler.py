"""A worker slowed on purpose, for straggler studies: real extra time after each step, no CPU burned.

    slowdown = Slowdown.for_worker(config, worker_id)
    slowdown.after(step_s, progress)      # sleeps (factor - 1) x step_s, counted in the worker's record

Where the factor comes from, for one call of a worker:
* the job's config, `slow_factor` for `slow_worker` (-1: every worker): every call of the job, `--direct` runs and
  test.sh's matrices (an axis like any key);
* else the header X-Chaos-Slow (faasgd.openfaas.CHAOS_SLOW_HEADER) that the local runtime's
  `faasgd up --chaos slow:FUNCTION:FACTOR[:WORKER]` adds to every delivery of FUNCTION: `FACTOR` slows every worker,
  `FACTOR:WORKER` the one named. The runtime knows no workers: the function reads the header and decides
  (`from_header`). A job that sets slow_factor itself keeps its own; the header is for jobs that do not.

The sleep follows the step it measured (perf_counter), so a slowed worker's steps take `factor` times as long as
its own compute, whatever else shares the cores; the worker's record keeps the factor and the seconds slept
(`slow_factor`, `slowed_s`), and the job's result names the workers slowed (job/result.py `stragglers`).
"""

from __future__ import annotations

import time
from typing import Callable

from faasgd.config import TrainConfig
from faasgd.errors import ConfigError
from faasgd.worker.progress import WorkerProgress


def from_header(config: TrainConfig, value: str | None) -> TrainConfig:
    """The call's config with the X-Chaos-Slow header's slowdown (FACTOR or FACTOR:WORKER) when the job sets none;
    a malformed header is a ConfigError naming it."""
    if not value or config.slow_factor != 1.0:
        return config
    factor, _, worker = value.strip().partition(":")
    try:
        update = {"slow_factor": float(factor), "slow_worker": int(worker) if worker else -1}
        if not 1.0 <= update["slow_factor"] <= 100.0 or update["slow_worker"] < -1:
            raise ValueError(value)
    except ValueError:
        raise ConfigError("X-Chaos-Slow", f"must be FACTOR or FACTOR:WORKER (1 <= FACTOR <= 100, WORKER >= 0), "
                                          f"got {value!r}") from None
    return config.model_copy(update=update)


class Slowdown:
    """One worker's sleep after each step: (factor - 1) x the step's measured seconds."""

    def __init__(self, factor: float = 1.0, sleep: Callable[[float], None] = time.sleep):
        self.factor, self.sleep = factor, sleep

    @classmethod
    def for_worker(cls, config: TrainConfig, worker_id: int, sleep: Callable[[float], None] = time.sleep) -> "Slowdown":
        slowed = config.slow_worker in (-1, worker_id)
        return cls(config.slow_factor if slowed else 1.0, sleep)

    def after(self, step_s: float, progress: WorkerProgress) -> float:
        """Sleep after a step of `step_s` seconds; the seconds slept (0 for a worker not slowed)."""
        progress.straggling.slow_factor = self.factor
        extra = (self.factor - 1.0) * max(0.0, step_s)
        if extra > 0:
            self.sleep(extra)
            progress.straggling.slowed_s += extra
        return extra

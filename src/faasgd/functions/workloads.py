"""Which workload trains a job's workers: the trainer's loader by the job's `algorithm`, and the calls that use it.

faasgd.worker's invocation knows no algorithm: its calls take the loader (`make`). Downpour's asynchronous worker
(faasgd.downpour) trains `algorithm: downpour`; LambdaML's synchronous one (faasgd.lambdaml) every other. The
functions that train (emnist-setup, emnist-train, `faasgd train --direct`) call these; stacking's never import
this module, so a stacking function loads neither workload.
"""

from __future__ import annotations

from faasgd.config import TrainConfig
from faasgd.downpour.worker import load_worker
from faasgd.lambdaml.sync_worker import load_sync_worker
from faasgd.worker import invocation
from faasgd.worker.invocation import Call
from faasgd.worker.protocol import WorkerLoader

LOADERS: dict[str, WorkerLoader] = {"downpour": load_worker}  # every other algorithm: LambdaML's rounds


def loader_for(config: TrainConfig) -> WorkerLoader:
    """The loader of the trainer that runs `config.algorithm`."""
    return LOADERS.get(config.algorithm, load_sync_worker)


def run_worker(call: Call) -> dict:
    """invocation.run_worker with the job's trainer."""
    return invocation.run_worker(call, make=loader_for(call.config))


def run_loop_call(call: Call) -> dict:
    """invocation.run_loop_call with the job's trainer."""
    return invocation.run_loop_call(call, make=loader_for(call.config))


def run_iteration(call: Call) -> dict:
    """invocation.run_iteration with the job's trainer."""
    return invocation.run_iteration(call, make=loader_for(call.config))

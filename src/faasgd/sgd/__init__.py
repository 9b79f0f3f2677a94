"""Downpour SGD: the worker loop, its state and stop rules."""

from faasgd.sgd.state import WorkerState
from faasgd.sgd.worker import DownpourWorker, run_worker

__all__ = ["DownpourWorker", "WorkerState", "run_worker"]

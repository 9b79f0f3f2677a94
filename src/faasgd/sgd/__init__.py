"""Downpour SGD: the worker (worker), its progress, leases, and the two invocation modes (loop, per_iteration)."""

from faasgd.sgd.loop import run_loop_call, run_worker
from faasgd.sgd.per_iteration import run_iteration
from faasgd.sgd.progress import WorkerProgress
from faasgd.sgd.worker import DownpourWorker

__all__ = ["DownpourWorker", "WorkerProgress", "run_iteration", "run_loop_call", "run_worker"]

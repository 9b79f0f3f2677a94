"""Downpour SGD: the worker (worker), its record (progress), leases, budgets, and one invocation in either mode."""

from faasgd.sgd.budget import UNLIMITED, CallBudget, HandOff, Superseded
from faasgd.sgd.invocation import run_iteration, run_loop_call, run_worker
from faasgd.sgd.progress import WorkerProgress
from faasgd.sgd.worker import DownpourWorker

__all__ = ["UNLIMITED", "CallBudget", "DownpourWorker", "HandOff", "Superseded", "WorkerProgress", "run_iteration",
           "run_loop_call", "run_worker"]

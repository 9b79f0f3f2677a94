"""A training call's limits and clock from the function's environment and the platform shim's context.

    call_clock(env)        the call's clock: its billed memory, and whether it is this replica's first (cold)
    call_budget(context)   when the call must stop: its deadline, its replica draining

Only the training functions use these (emnist-setup, emnist-train): they import faasgd.worker's budget and clock,
which stacking's functions never load.
"""

from __future__ import annotations

from typing import Mapping

from faasgd.functions import replica_cache
from faasgd.functions.admission import quantity
from faasgd.worker.budget import UNLIMITED, CallBudget
from faasgd.worker.call_clock import CallClock


def memory_mb(env: Mapping[str, str]) -> float | None:
    """The function's memory limit in MiB (env `memory_limit`, stack.yml keeps it equal to limits.memory): what
    a call is billed at. None when the function states none (CallClock bills DEFAULT_MEMORY_MB)."""
    text = env.get("memory_limit")
    return None if not text else quantity("memory_limit", text) / float(1 << 20)


def call_clock(env: Mapping[str, str]) -> CallClock:
    """The clock of a call starting now: its billed memory, and whether it is this replica's first (cold)."""
    return CallClock.begin(memory_mb(env), cold=replica_cache.first_call())


def call_budget(context) -> CallBudget:
    """The call's limits as the platform shim tells them: `context.deadline` (time.monotonic seconds; the
    template's index.py sets it below the watchdog's exec_timeout) and `context.draining()` (SIGTERM)."""
    deadline, draining = getattr(context, "deadline", None), getattr(context, "draining", None)
    if deadline is None and draining is None:
        return UNLIMITED
    return CallBudget(deadline=deadline, draining=draining or (lambda: False))

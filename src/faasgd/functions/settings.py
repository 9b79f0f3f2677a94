"""What a function replica takes from its own environment (stack.yml `environment`) besides job defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from faasgd.config import read_setting
from faasgd.openfaas import DEFAULT_GATEWAY_URL, TRAIN_FUNCTION
from faasgd.sgd import UNLIMITED, CallBudget


@dataclass(frozen=True)
class FunctionEnv:
    """The function's own settings, read from its environment on each call (cheap; tests change it)."""

    store_url: str  # the store jobs live in unless a request names another (env `store_url`)
    gateway_url: str  # where fan-out and per-iteration chaining invoke functions (env `gateway_url`)
    train_function: str  # the function fan-out and chaining invoke (env `train_function`)

    @classmethod
    def read(cls, env: Mapping[str, str]) -> "FunctionEnv":
        return cls(store_url=read_setting(env, "store_url"),
                   gateway_url=env.get("gateway_url") or DEFAULT_GATEWAY_URL,
                   train_function=env.get("train_function") or TRAIN_FUNCTION)


def call_budget(context) -> CallBudget:
    """The call's limits as the platform shim tells them: `context.deadline` (time.monotonic seconds; the
    template's index.py sets it below the watchdog's exec_timeout) and `context.draining()` (SIGTERM)."""
    deadline, draining = getattr(context, "deadline", None), getattr(context, "draining", None)
    if deadline is None and draining is None:
        return UNLIMITED
    return CallBudget(deadline=deadline, draining=draining or (lambda: False))

"""What a function replica takes from its own environment (stack.yml `environment`) besides job defaults.

Store locations live here and nowhere a caller reaches: `store_url` (the function's own store), `stores`
(the others a request may name: "redis=URL,memcached=URL"), `local_store_url` (the node-local cache).
A request names a store (`store`); the password a URL needs comes from the secret file, sent only there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from faasgd.config import read_setting
from faasgd.errors import ConfigError
from faasgd.functions import replica_cache
from faasgd.functions.admission import quantity
from faasgd.openfaas import DEFAULT_GATEWAY_URL, TRAIN_FUNCTION
from faasgd.sgd import UNLIMITED, CallBudget
from faasgd.sgd.call_clock import CallClock
from faasgd.store.url import mask_password


@dataclass(frozen=True)
class FunctionEnv:
    """The function's own settings, read from its environment on each call (cheap; tests change it)."""

    store_url: str  # the store jobs live in unless a request names another (env `store_url`)
    stores: dict[str, str]  # the stores a request may name (env `stores`: "redis=URL,memcached=URL")
    local_store_url: str  # the node-local cache (env `local_store_url`)
    gateway_url: str  # where fan-out and chaining invoke functions (env `gateway_url`)
    train_function: str  # the function fan-out and chaining invoke (env `train_function`)

    @classmethod
    def read(cls, env: Mapping[str, str]) -> "FunctionEnv":
        return cls(store_url=read_setting(env, "store_url"), stores=named_stores(env.get("stores") or ""),
                   local_store_url=read_setting(env, "local_store_url"),
                   gateway_url=env.get("gateway_url") or DEFAULT_GATEWAY_URL,
                   train_function=env.get("train_function") or TRAIN_FUNCTION)

    def store_url_of(self, name: str) -> str:
        """The URL of the store a request names ("" or "default": the function's store_url)."""
        if name in ("", "default"):
            return self.store_url
        if name not in self.stores:
            raise ConfigError("store", f"no store named {name!r} here (configured: {', '.join(['default', *self.stores])})")
        return self.stores[name]


def named_stores(text: str) -> dict[str, str]:
    """`stores` from the environment: "name=URL,name=URL" (each URL checked; names as the `store` key takes)."""
    stores = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, url = part.partition("=")
        if not sep:
            raise ConfigError("stores", f"must be name=URL pairs separated by commas, got {mask_password(part)!r}")
        stores[read_setting({"store": name}, "store")] = read_setting({"store_url": url}, "store_url")
    return stores


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

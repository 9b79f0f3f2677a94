"""What a function replica takes from its own environment (stack.yml `environment`) besides job defaults.

Store locations live here and nowhere a caller reaches: `store_url` (the function's own store), `stores`
(the others a request may name: "redis=URL,pool=memcached://H:P,H:P"; named_stores), `local_store_url`
(the node-local cache).
A request names a store (`store`); the password a URL needs comes from the secret file, sent only there.
Every function reads these (stacking's too): nothing here imports a worker (a call's clock and budget: call_limits.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from faasgd.config import read_setting
from faasgd.errors import ConfigError
from faasgd.openfaas import DEFAULT_GATEWAY_URL, TRAIN_FUNCTION
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
            local = f"; the local runtime gives every function one with `faasgd down && faasgd up --stores {name}`" \
                if name in OPTIONAL_STORES else ""
            raise ConfigError("store", f"no store named {name!r} here (configured: {', '.join(['default', *self.stores])})"
                                       f": a function's stores are the `stores` of its environment (stack.yml){local}")
        return self.stores[name]


def named_stores(text: str) -> dict[str, str]:
    """`stores` from the environment: "name=URL,name=URL" (each URL checked; names as the `store` key takes).

    A URL may name several servers with commas of its own (`memcached://h1:11211,h2:11211`), so a comma starts
    a new entry only where a `name=` follows it: hosts and ports never hold '='. Empty entries are skipped;
    a name given twice, an entry without `=` and a bad URL are ConfigErrors naming `stores`.
    """
    stores: dict[str, str] = {}
    for part in filter(None, (p.strip(" ,") for p in _ENTRY_START.split(text))):
        name, sep, url = part.partition("=")
        if not sep:
            raise ConfigError("stores", f"must be name=URL entries separated by commas, got {mask_password(part)!r}")
        if not name.strip():
            raise ConfigError("stores", f"entry {mask_password(part)!r} has no name before '='")
        try:
            name = read_setting({"store": name}, "store")
            url = read_setting({"store_url": url}, "store_url")
        except ConfigError as error:
            raise ConfigError("stores", f"entry {mask_password(part)!r}: {error}") from error
        if name in stores:
            raise ConfigError("stores", f"store {name!r} is named twice")
        stores[name] = url
    return stores


OPTIONAL_STORES = ("cluster", "pool")  # the local runtime's stores on demand (faasgd.local.services.optional_stores)
_ENTRY_START = re.compile(r",(?=\s*[A-Za-z0-9_-]*\s*=)")  # a comma followed by `name=`: the next entry

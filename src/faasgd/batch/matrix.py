"""A batch's matrix file: which configurations to run, how many rounds, what is held fixed.

```yaml
name: fashion-workers-period        # names the output folder
rounds: 3                           # default; ./test.sh --rounds overrides
fixed:                              # config keys held constant (any faasgd config key)
  dataset: fashion-mnist
  target_accuracy: 0.85
  max_epochs: 20
matrix:                             # crossed with each other; a scalar is one value
  number_of_workers: [1, 2, 4]
  n_fetch: [1, 10]
  n_push: [1, 10]
  store: [redis]                    # redis | memcached (the target's own stores) or a store URL
together: [[n_fetch, n_push]]       # keys that vary in step (same-length lists), not crossed
```
Every configuration is checked with the config parser before anything runs: a bad key or value
is an error naming it and the configuration.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faasgd.config import FIELDS, STORE_KEYWORDS, load_config
from faasgd.errors import ConfigError

TOP_KEYS = ("name", "description", "rounds", "fixed", "matrix", "together")


class MatrixError(ConfigError):
    """Raised when a matrix file has an unknown key, a bad value or a configuration faasgd rejects."""


@dataclass(frozen=True)
class Configuration:
    config_id: int
    varying: dict[str, Any]  # the keys that vary across the matrix, with this configuration's values
    values: dict[str, Any]  # every key set for this run (fixed + matrix), `store` included

    @property
    def label(self) -> str:
        return " ".join(f"{k}={_show(v)}" for k, v in self.varying.items()) or "single configuration"

    @property
    def store(self) -> str:
        return str(self.values.get("store", "redis"))

    def overrides(self) -> dict[str, Any]:
        """The config keys for the setup body (the store is resolved by the target)."""
        return {k: v for k, v in self.values.items() if k != "store"}


@dataclass(frozen=True)
class Matrix:
    name: str
    rounds: int
    configurations: list[Configuration]
    source: dict = field(repr=False)


def _show(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def load_matrix(path: str | Path) -> Matrix:
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as error:
        raise MatrixError("matrix", f"cannot read {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise MatrixError("matrix", f"{path} is not valid YAML: {error}") from None
    return parse_matrix(document or {}, default_name=path.stem)


def parse_matrix(document: dict, default_name: str = "batch") -> Matrix:
    if not isinstance(document, dict):
        raise MatrixError("matrix", f"must be a mapping with keys {', '.join(TOP_KEYS)}")
    for key in document:
        if key not in TOP_KEYS:
            raise MatrixError(str(key), f"unknown matrix key (allowed: {', '.join(TOP_KEYS)})")
    fixed = _mapping(document, "fixed")
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in _mapping(document, "matrix").items()}
    for section, keys in (("fixed", fixed), ("matrix", axes)):
        for key in keys:
            if key not in FIELDS and key != "store":
                raise MatrixError(f"{section}.{key}", "unknown key (a faasgd config key or store)")
        for key in set(fixed) & set(axes):
            raise MatrixError(f"matrix.{key}", "is also in fixed; give it in one place")
    for key, values in axes.items():
        if not values:
            raise MatrixError(f"matrix.{key}", "needs at least one value")
    groups = _groups(document.get("together") or [], axes)
    rounds = document.get("rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 1000:
        raise MatrixError("rounds", f"must be an integer in [1, 1000], got {rounds!r}")
    configurations = []
    for config_id, combo in enumerate(itertools.product(*[_rows(g, axes) for g in groups])):
        chosen = {k: v for part in combo for k, v in part.items()}
        values = {**fixed, **chosen}
        varying = {k: chosen[k] for k in axes if len(axes[k]) > 1}
        configuration = Configuration(config_id, varying, values)
        _check(configuration)
        configurations.append(configuration)
    return Matrix(str(document.get("name") or default_name), rounds, configurations, document)


def _mapping(document: dict, key: str) -> dict:
    value = document.get(key) or {}
    if not isinstance(value, dict):
        raise MatrixError(key, f"must be a mapping of config keys, got {type(value).__name__}")
    return value


def _groups(together: list, axes: dict) -> list[list[str]]:
    """Axes grouped: each `together` list is one group, every other axis its own group."""
    if not isinstance(together, list) or not all(isinstance(g, list) and g for g in together):
        raise MatrixError("together", "must be a list of lists of matrix keys, e.g. [[n_fetch, n_push]]")
    seen = set()
    for group in together:
        for key in group:
            if key not in axes:
                raise MatrixError("together", f"{key!r} is not a key of matrix")
            if key in seen:
                raise MatrixError("together", f"{key!r} is in two groups")
            seen.add(key)
        if len({len(axes[k]) for k in group}) != 1:
            raise MatrixError("together", f"the lists of {', '.join(group)} must have the same length")
    return [list(g) for g in together] + [[k] for k in axes if k not in seen]


def _rows(group: list[str], axes: dict) -> list[dict]:
    return [dict(zip(group, values)) for values in zip(*[axes[k] for k in group])]


def _check(configuration: Configuration) -> None:
    store = configuration.values.get("store", "redis")
    overrides = configuration.overrides()
    if store not in STORE_KEYWORDS:
        overrides["store_url"] = store
    try:
        load_config({}, overrides)
    except ConfigError as error:
        field_name = "store" if error.field == "store_url" and "store" in configuration.values else error.field
        raise MatrixError(field_name, f"{str(error).split(': ', 1)[1]} (in configuration {configuration.label})") \
            from None

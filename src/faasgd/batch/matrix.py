"""A batch's matrix file: which configurations to run, how many rounds, what is held fixed.

```yaml
name: fashion-workers-period        # names the output folder: letters, digits, . _ -; at most 64
rounds: 3                           # default; ./test.sh --rounds overrides
fixed:                              # config keys held constant (any faasgd config key)
  dataset: fashion-mnist
  target_accuracy: 0.85
  max_epochs: 20
matrix:                             # crossed with each other; a scalar is one value
  number_of_workers: [1, 2, 4]
  n_fetch: [1, 10]
  n_push: [1, 10]
  store: [redis]                    # a store the functions have configured, by name (stack.yml: redis, memcached)
together: [[n_fetch, n_push]]       # keys that vary in step (same-length lists), not crossed
prices: {gb_s: 0.0000133334}        # US dollars the runs' costs are priced at (faasgd.cost.Prices; default AWS's)
```
`workload: stacking` (default `emnist`) makes the keys stacking config keys (faasgd.stacking.config) and
runs each configuration through stacking-driver instead of emnist-setup. One workload per matrix: a batch's
table has one set of columns, so a list of workloads is refused (run two matrices, compare with
`faasgd results compare`).
`global_batch_size` (rows a step across all workers, split evenly among them) holds the rows a step fixed while
`number_of_workers` varies, so every configuration compares like with like; a matrix giving it beside
`batch_size` is refused naming both, and a worker count it does not divide names its configuration.
Every configuration is checked with its workload's config parser before anything runs: a bad key or value
is an error naming it and the configuration. The number of runs (configurations x rounds) is
computed from the axes' lengths before any configuration is built, and refused above `max_runs`.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faasgd.checks import whole_number
from faasgd.batch import bounds
from faasgd.config import FIELDS, load_request
from faasgd.cost import Prices
from faasgd.errors import ConfigError
from faasgd.stacking import config as stacking_config
from faasgd.stacking.admission import check as admit_stacking
from faasgd.store.url import mask_password

TOP_KEYS = ("name", "description", "workload", "rounds", "fixed", "matrix", "together", "prices")
WORKLOADS = {  # workload: (its config keys, the parse its function makes of a request body)
    "emnist": (FIELDS, lambda values: load_request({}, values)),
    # the driver's parse, then its admission against the stacking functions' memory limit (a 413 there)
    "stacking": (stacking_config.FIELDS, lambda values: admit_stacking(stacking_config.load_stacking(None, values))),
}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # a plain folder name: no separator, no leading dot
MAX_ROUNDS = 1000
DEFAULT_MAX_RUNS = 1000  # configurations x rounds; ./test.sh --max-runs raises it


class MatrixError(ConfigError):
    """Raised when a matrix file has an unknown key, a bad value or a configuration faasgd rejects."""


@dataclass(frozen=True)
class Configuration:
    config_id: int
    varying: dict[str, Any]  # the keys that vary across the matrix, with this configuration's values
    values: dict[str, Any]  # every key set for this run (fixed + matrix), `store` included
    workload: str = "emnist"  # which function set runs it (WORKLOADS)

    @property
    def label(self) -> str:
        return " ".join(f"{k}={_show(v)}" for k, v in self.varying.items()) or "single configuration"

    @property
    def store(self) -> str:
        return str(self.values.get("store") or "default")

    def overrides(self) -> dict[str, Any]:
        """The config keys for the setup body."""
        return dict(self.values)


@dataclass(frozen=True)
class Matrix:
    name: str
    rounds: int
    configurations: list[Configuration]
    source: dict = field(repr=False)
    workload: str = "emnist"  # every configuration's
    prices: Prices = field(default_factory=Prices)  # what the runs' costs are priced at (`prices:`)


def _show(value: Any) -> str:
    """A value as label text; a store URL's password masked."""
    return ",".join(map(_show, value)) if isinstance(value, (list, tuple)) else mask_password(str(value))


def read_matrix_text(path: str | Path) -> str:
    """The file's text, bounded before it is read (faasgd.batch.bounds: a regular file of MAX_MATRIX_BYTES)."""
    return bounds.read_bounded(path)


def load_matrix(path: str | Path, rounds: int | None = None, max_runs: int = DEFAULT_MAX_RUNS) -> Matrix:
    """The matrix file at `path`; `rounds` (when given) overrides the file's."""
    return parse_matrix_text(read_matrix_text(path), Path(path).stem, rounds, max_runs)


def parse_matrix_text(text: str, default_name: str, rounds: int | None = None,
                      max_runs: int = DEFAULT_MAX_RUNS) -> Matrix:
    """A matrix from a file's text; invalid YAML is an error naming `matrix` in one line."""
    try:
        document = yaml.safe_load(text)
    except RecursionError:  # PyYAML composes nodes recursively
        raise MatrixError("matrix", "not a matrix: YAML nested too deeply") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise MatrixError("matrix", f"not valid YAML{at}: {getattr(error, 'problem', None) or 'parse error'}") from None
    bounds.check_values(document)
    return parse_matrix(document or {}, default_name=default_name, rounds=rounds, max_runs=max_runs)


def check_name(name: Any) -> str:
    """The batch's name, which names its output folder: a plain name, never a path."""
    if isinstance(name, int) and not isinstance(name, bool):
        name = str(name)  # `name: 2024` in YAML
    if not isinstance(name, str) or not NAME.match(name) or ".." in name:
        raise MatrixError("name", "must be a plain name of 1 to 64 letters, digits, '.', '_' or '-', starting with a "
                                  f"letter or digit, without '..' (it names the output folder; set `name:` in the matrix file), "
                                  f"got {name!r}")
    return name


def check_rounds(rounds: Any) -> int:
    return whole_number(rounds, "rounds", low=1, high=MAX_ROUNDS, error=MatrixError)


def count_configurations(groups: list[list[str]], axes: dict) -> int:
    """How many configurations the axes make (a `together` group counts once), without building any."""
    return math.prod(len(axes[group[0]]) for group in groups)


def check_runs(configurations: int, rounds: int, max_runs: int) -> None:
    whole_number(max_runs, "max_runs", low=1, high=bounds.MAX_RUNS, must=f"an integer in [1, {bounds.MAX_RUNS:,}]",
                 error=MatrixError)
    runs = configurations * rounds
    if runs > max_runs:
        raise MatrixError("runs", f"the matrix makes {runs} runs ({configurations} configuration(s) x {rounds} round(s)), "
                                  f"more than the cap of {max_runs}; raise it with --max-runs")


def parse_matrix(document: dict, default_name: str = "batch", rounds: int | None = None,
                 max_runs: int = DEFAULT_MAX_RUNS) -> Matrix:
    """Check and expand a matrix document; `rounds` (when given) overrides the document's."""
    if not isinstance(document, dict):
        raise MatrixError("matrix", f"must be a mapping with keys {', '.join(TOP_KEYS)}")
    for key in document:
        if key not in TOP_KEYS:
            raise MatrixError(str(key), f"unknown matrix key (allowed: {', '.join(TOP_KEYS)})")
    workload = check_workload(document.get("workload", "emnist"))
    fields, _ = WORKLOADS[workload]
    fixed = _mapping(document, "fixed")
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in _mapping(document, "matrix").items()}
    for section, keys in (("fixed", fixed), ("matrix", axes)):
        for key in keys:
            if key == "workload":
                raise MatrixError(f"{section}.workload", "is a top-level key (one workload per matrix)")
            if key not in fields:
                raise MatrixError(f"{section}.{key}", f"unknown key (a {workload} config key: {', '.join(fields)})")
        for key in set(fixed) & set(axes):
            raise MatrixError(f"matrix.{key}", "is also in fixed; give it in one place")
    check_one_batch_key(workload, {**fixed, **axes})
    for key, values in axes.items():
        if not values:
            raise MatrixError(f"matrix.{key}", "needs at least one value")
    groups = _groups(document.get("together") or [], axes)
    name = check_name(document.get("name") or default_name)
    check_rounds(document.get("rounds", 1))
    rounds = check_rounds(document.get("rounds", 1) if rounds is None else rounds)
    check_runs(count_configurations(groups, axes), rounds, max_runs)  # before any configuration is built
    configurations = []
    for config_id, combo in enumerate(itertools.product(*[_rows(g, axes) for g in groups])):
        chosen = {k: v for part in combo for k, v in part.items()}
        values = {**fixed, **chosen}
        varying = {k: chosen[k] for k in axes if len(axes[k]) > 1}
        configuration = Configuration(config_id, varying, values, workload)
        _check(configuration)
        configurations.append(configuration)
    return Matrix(name, rounds, configurations, document, workload, Prices.parse(document.get("prices")))


def check_one_batch_key(workload: str, keys: dict) -> None:
    """Rows a step are set per worker (batch_size) or across the workers (global_batch_size), never both."""
    if workload == "emnist" and "batch_size" in keys and "global_batch_size" in keys:
        raise MatrixError("global_batch_size", "give batch_size (rows per worker) or global_batch_size (rows a step "
                                               "across all workers, split among them) in a matrix, not both")


def check_workload(workload: Any) -> str:
    """The matrix's one workload; a list (mixed workloads) is refused: one batch, one set of columns."""
    if isinstance(workload, list):
        raise MatrixError("workload", f"one workload per matrix (a batch's table has one set of columns), got "
                                      f"{workload!r}; run one matrix per workload")
    if not isinstance(workload, str) or workload not in WORKLOADS:
        raise MatrixError("workload", f"must be one of {', '.join(WORKLOADS)}, got {workload!r}")
    return workload


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
    """As the functions will read it (load_request, load_stacking): a store is named, never located."""
    try:
        WORKLOADS[configuration.workload][1](configuration.overrides())
    except ConfigError as error:
        raise MatrixError(error.field, f"{str(error).split(': ', 1)[1]} (in configuration {configuration.label})") \
            from None

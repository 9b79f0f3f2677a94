"""A sweep file (`faasgd sweep FILE`): the search space, the objective, the trials and where Optuna keeps the study.

    study: lr-workers                 # the Optuna study's name; a study of that name in `storage` goes on
    storage: sqlite:///sweep.db       # Optuna's storage: a SQLite file (relative: to where the command runs)
    objective: time_to_target         # or cost_at_target; minimised
    trials: 3                         # trials this command runs (added to the study's earlier ones)
    seed: 0                           # the sampler's (TPE); optional
    timeout_s: 600                    # a trial's job still running then is cancelled and the trial failed
    fixed: {dataset: synthetic, train_samples: 2000, hidden_sizes: [32], target_accuracy: 0.8}
    space:
      learning_rate: {low: 0.01, high: 0.5, log: true}   # a range: floats, or integers when both bounds are
      number_of_workers: {low: 1, high: 3}
      n_push: [1, 5, 10]                                 # a list: the values to choose from
      store: [redis, memcached]

The space's keys are config keys (docs/reference/configuration.md) other than store locations and the fixed ones.
Everything is checked before any trial runs: the keys, the bounds, and the fixed keys with each range's bounds and
each choice as emnist-setup would check them (faasgd.config). A bad one is a ConfigError naming it
(`space.learning_rate.low`), and nothing is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from faasgd.checks import is_real, is_whole, positive_number, whole_number
from faasgd.config import FIELDS, LOCATION_KEYS, load_request
from faasgd.errors import ConfigError

# the objective's name -> the result's figure it minimises: the time to the target, or the job's cost when it met
# its target (a job stops at its target, so its cost is what reaching it cost, with the last steps until its
# workers stop)
OBJECTIVES = {"time_to_target": "time_to_target_s", "cost_at_target": "cost_usd"}
KEYS = ("study", "storage", "objective", "trials", "seed", "timeout_s", "fixed", "space")
TIMEOUT_S = 600.0
MAX_BYTES = 1 << 20  # a sweep file is read up to this; a longer one is cut (and then fails to parse, or names a key)


@dataclass(frozen=True)
class Dimension:
    """One key of the search space: a range (low, high, log) or a list of choices."""

    name: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    choices: tuple | None = None

    def suggest(self, trial) -> Any:
        """The trial's value for this key (an optuna.Trial's suggest_*)."""
        if self.choices is not None:
            return trial.suggest_categorical(self.name, list(self.choices))
        if is_whole(self.low) and is_whole(self.high):
            return trial.suggest_int(self.name, self.low, self.high, log=self.log)
        return trial.suggest_float(self.name, float(self.low), float(self.high), log=self.log)

    def extremes(self) -> list:
        """The values that bound what a trial may take: every choice, or both bounds."""
        return list(self.choices) if self.choices is not None else [self.low, self.high]


@dataclass(frozen=True)
class Sweep:
    study: str
    storage: str
    objective: str  # a key of OBJECTIVES
    trials: int
    seed: int | None
    timeout_s: float
    fixed: dict[str, Any]
    space: tuple[Dimension, ...]

    @property
    def figure(self) -> str:
        """The result's figure the study minimises."""
        return OBJECTIVES[self.objective]


def read_sweep(path: str) -> Sweep:
    """The sweep file at `path` (YAML), checked whole."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f.read(MAX_BYTES + 1))
    except OSError as error:
        raise ConfigError("FILE", f"cannot read the sweep file {path!r}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError("FILE", f"{path!r} is not YAML: {str(error)[:300]}") from None
    return parse_sweep(data)


def parse_sweep(data: Any) -> Sweep:
    """The sweep a file's YAML holds, checked whole."""
    if not isinstance(data, dict):
        raise ConfigError("sweep", f"must be a mapping of {', '.join(KEYS)}, got {type(data).__name__}")
    for key in data.keys() - set(KEYS):
        raise ConfigError(str(key), f"is not a sweep key; they are {', '.join(KEYS)}")
    for key in ("study", "storage", "objective", "space"):
        if key not in data:
            raise ConfigError(key, "is missing")
    study, storage = text(data["study"], "study"), text(data["storage"], "storage")
    check_storage(storage)
    if data["objective"] not in OBJECTIVES:
        raise ConfigError("objective", f"must be one of {', '.join(OBJECTIVES)}, got {data['objective']!r}")
    fixed = data.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise ConfigError("fixed", f"must be a mapping of config keys, got {type(fixed).__name__}")
    sweep = Sweep(study=study, storage=storage, objective=data["objective"],
                  trials=whole_number(data.get("trials", 10), "trials", low=1, high=10_000),
                  seed=None if data.get("seed") is None else whole_number(data["seed"], "seed", low=0),
                  timeout_s=positive_number(data.get("timeout_s", TIMEOUT_S), "timeout_s"),
                  fixed=dict(fixed), space=dimensions(data["space"], fixed))
    check_configs(sweep)
    return sweep


def text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(field, f"must be a non-empty string, got {value!r}")
    return value


def check_storage(storage: str) -> None:
    """Optuna's RDB storage URL; a SQLite file's folder must exist."""
    if "://" not in storage:
        raise ConfigError("storage", f"must be a database URL such as sqlite:///sweep.db, got {storage!r}")
    if storage.startswith("sqlite:///"):
        folder = os.path.dirname(os.path.abspath(storage[len("sqlite:///"):]))
        if not os.path.isdir(folder):
            raise ConfigError("storage", f"the SQLite file's folder {folder} does not exist")


def dimensions(space: Any, fixed: dict) -> tuple[Dimension, ...]:
    if not isinstance(space, dict) or not space:
        raise ConfigError("space", "must be a mapping of config keys to ranges or lists, with at least one key")
    found = []
    for name, value in space.items():
        field = f"space.{name}"
        if name not in FIELDS or name in LOCATION_KEYS:
            raise ConfigError(field, "is not a config key a job takes (store locations come from the functions)")
        if name in fixed:
            raise ConfigError(field, "is fixed too: give it in one of fixed and space")
        found.append(dimension(name, value, field))
    return tuple(found)


def dimension(name: str, value: Any, field: str) -> Dimension:
    if isinstance(value, list):
        if not value or len({repr(v) for v in value}) != len(value):
            raise ConfigError(field, f"must list distinct values to choose from, got {value!r}")
        return Dimension(name, choices=tuple(value))
    if not isinstance(value, dict) or set(value) - {"low", "high", "log"} or not {"low", "high"} <= set(value):
        raise ConfigError(field, f"must be a list of values or a range {{low: , high: , log: }}, got {value!r}")
    for bound in ("low", "high"):
        if not is_real(value[bound]):
            raise ConfigError(f"{field}.{bound}", f"must be a number, got {value[bound]!r}")
    log = value.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{field}.log", f"must be true or false, got {log!r}")
    if not value["low"] < value["high"]:
        raise ConfigError(f"{field}.high", f"must be above low ({value['low']!r}), got {value['high']!r}")
    if log and not value["low"] > 0:
        raise ConfigError(f"{field}.low", f"must be above 0 on a log scale, got {value['low']!r}")
    return Dimension(name, low=value["low"], high=value["high"], log=log)


def check_configs(sweep: Sweep) -> None:
    """The fixed keys, and with them each range's bounds and each choice, as a job's request is checked."""
    try:
        load_request({}, sweep.fixed)
    except ConfigError as error:
        raise ConfigError(f"fixed.{error.field}", str(error).split(": ", 1)[-1]) from None
    for dim in sweep.space:
        for value in dim.extremes():
            try:
                load_request({}, {**sweep.fixed, dim.name: value})
            except ConfigError as error:
                raise ConfigError(f"space.{dim.name}", f"{value!r}: {error}") from None

"""The base models (vSwarm's four regressors by default) and the meta-model, and how they are fitted.

A model is named and given a few parameters from an allowlist (each with its range): a request can ask
for nothing else, so nothing a caller sends reaches scikit-learn's constructors unchecked. Every model's
random_state is the job's seed. scikit-learn is imported inside the functions that fit (the extra
`stacking`), so importing this module needs numpy only.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from faasgd.config.base import ConfigModel, Float, Int, validate
from faasgd.errors import ConfigError


class LinearSVRParams(ConfigModel):
    C: Float(0.0, 1e6, low_open=True) = 1.0
    tol: Float(0.0, 1.0, low_open=True) = 1e-6
    max_iter: Int(1, 100_000) = 1000


class LassoParams(ConfigModel):
    alpha: Float(0.0, 1e6, low_open=True) = 0.1
    max_iter: Int(1, 100_000) = 1000


class RandomForestParams(ConfigModel):
    n_estimators: Int(1, 200) = 2
    max_depth: Int(1, 32) = 2
    min_samples_split: Int(2, 1000) = 2
    min_samples_leaf: Int(1, 1000) = 2


class KNeighborsParams(ConfigModel):
    n_neighbors: Int(1, 10_000) = 20


# name -> the parameters a request may set, each with its range and default (vSwarm's settings)
PARAMS: dict[str, type[ConfigModel]] = {"LinearSVR": LinearSVRParams, "Lasso": LassoParams,
                                        "RandomForestRegressor": RandomForestParams,
                                        "KNeighborsRegressor": KNeighborsParams}
META_MODEL = "LogisticRegression"


@dataclass(frozen=True)
class ModelSpec:
    """One base model: its scikit-learn name and its parameters (the allowlisted ones, defaults filled in)."""

    name: str  # one of PARAMS
    params: dict[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.name, "params": dict(self.params)}


def spec(name: str, **params: Any) -> ModelSpec:
    return parse_spec("models", {"model": name, "params": params})


def parse_spec(field_name: str, value: Any) -> ModelSpec:
    """A name ("Lasso") or {"model": name, "params": {...}}; params from the model's allowlist only. A ModelSpec
    (already parsed) is itself."""
    if isinstance(value, ModelSpec):
        return value
    if isinstance(value, str):
        value = {"model": value.strip(), "params": {}}
    if not isinstance(value, Mapping) or set(value) - {"model", "params"} or not isinstance(value.get("params", {}), Mapping):
        raise ConfigError(field_name, f"each model must be a name or {{\"model\": name, \"params\": {{...}}}}, got {value!r}"[:300])
    name = value.get("model")
    if name not in PARAMS:
        raise ConfigError(field_name, f"unknown model {name!r} (allowed: {', '.join(PARAMS)})"[:300])
    given = dict(value.get("params", {}))
    for key in given:
        if key not in PARAMS[name].model_fields:
            raise ConfigError(field_name, f"{name} takes no parameter {key!r} here "
                                          f"(allowed: {', '.join(PARAMS[name].model_fields)})"[:300])
    try:
        return ModelSpec(name, validate(PARAMS[name], given).model_dump())
    except ConfigError as error:
        raise ConfigError(field_name, f"{name} {error}"[:300]) from None


def parse_models(field_name: str, value: Any) -> tuple[ModelSpec, ...]:
    """`models`: a list (JSON) or a comma-separated string of names (environment), 1 to 16 models."""
    if isinstance(value, str):
        value = [part for part in (p.strip() for p in value.split(",")) if part]
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 16:
        raise ConfigError(field_name, f"must be a list of 1 to 16 models, e.g. [\"Lasso\", \"KNeighborsRegressor\"], "
                                      f"got {value!r}"[:300])
    return tuple(parse_spec(field_name, v) for v in value)


DEFAULT_MODELS = tuple(ModelSpec(name, params().model_dump()) for name, params in PARAMS.items())


def build(model: ModelSpec, seed: int):
    """The unfitted scikit-learn estimator for `model`."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Lasso
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.svm import LinearSVR

    if model.name == "LinearSVR":
        return LinearSVR(random_state=seed, **model.params)
    if model.name == "Lasso":
        return Lasso(random_state=seed, **model.params)
    if model.name == "RandomForestRegressor":
        return RandomForestRegressor(random_state=seed, n_jobs=1, **model.params)
    return KNeighborsRegressor(weights="uniform", algorithm="brute", **model.params)


_QUIET = threading.Lock()
LIBLINEAR_MESSAGE = "Liblinear failed to converge"


def quiet_liblinear(category: type[Warning]) -> None:
    """LinearSVR at tol 1e-6, as vSwarm sets it, stops at its iteration limit: expected, not news.

    The filter is the process's (warnings.catch_warnings swaps the module's global filter list, so trainers fitting
    in threads, as the local runtime's replicas do, restored each other's and let the warning through). It is
    added only when it is not first already, under a lock: filterwarnings removes and re-inserts its filter, and a
    thread warning in between went through (1 run in 3 of the threaded test)."""
    with _QUIET:
        first = warnings.filters[0] if warnings.filters else None
        if not (first and first[0] == "ignore" and first[2] is category and first[1] is not None
                and first[1].pattern == LIBLINEAR_MESSAGE):
            warnings.filterwarnings("ignore", message=LIBLINEAR_MESSAGE, category=category)


def fit_base(model: ModelSpec, seed: int, cv_folds: int, x_train: np.ndarray, y_train: np.ndarray):
    """(fitted estimator, out-of-fold predictions on the training rows): what stacking fits its meta-model on."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import cross_val_predict

    quiet_liblinear(ConvergenceWarning)
    out_of_fold = cross_val_predict(build(model, seed), x_train, y_train, cv=cv_folds)
    estimator = build(model, seed).fit(x_train, y_train)
    return estimator, out_of_fold.astype(np.float64)


def fit_meta(seed: int, meta_train: np.ndarray, y_train: np.ndarray, c: float = 0.0):
    """The meta-model, LogisticRegression, fitted on the stacked predictions; `c` 0: unpenalised, else its C.

    Decision: unpenalised by default, where vSwarm keeps scikit-learn's C=1. With four stacked predictions
    in [0, 1] and 9:1 classes, the L2 penalty shrinks the weights until the intercept (the majority class)
    decides; measured over 10 seeds of the default set, accuracy 0.879 (C=1) vs 0.896 (none), against 0.897
    for the best base model chosen afterwards (docs/how-to/stacking.md).
    """
    from sklearn.linear_model import LogisticRegression

    strength = np.inf if c == 0.0 else c  # C = inf: no penalty (scikit-learn 1.8 deprecates penalty=None)
    return LogisticRegression(C=strength, random_state=seed, max_iter=1000).fit(meta_train, y_train)

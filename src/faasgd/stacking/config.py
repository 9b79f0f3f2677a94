"""A stacking job's configuration: one frozen dataclass, one comment per field.

Keys are the same in the stacking functions' stack.yml `environment`, JSON request bodies and the job's
`config` record. Precedence: defaults < environment < request body. Unknown keys in a body are a 400 naming
the key; so are bad values; a store's location is never taken from a request (a request names a store).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from faasgd.config import LOCATION_KEYS, _choice, _float, _int, read_setting
from faasgd.errors import ConfigError
from faasgd.stacking.models import DEFAULT_MODELS, ModelSpec, parse_models

TRANSFERS = ("inline", "store", "s3")  # vSwarm's TRANSFER_TYPE; s3: the function's S3-compatible space (faasgd.channels)
AVAILABLE_TRANSFERS = TRANSFERS
S3_LOCATION_KEYS = ("s3_url",)  # the function's own S3 location (faasgd.channels.configured), never a request's
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


@dataclass(frozen=True)
class StackingConfig:
    """Everything that defines a stacking job; stored with the job so every function reads the same."""

    n_samples: int = 300  # rows of the generated classification set (vSwarm: 300)
    n_features: int = 1024  # features per row (vSwarm: 1024)
    test_fraction: float = 0.3  # share of the rows held out (stratified) for base_scores and ensemble_score
    seed: int = 42  # the dataset's, the split's and every model's random_state (vSwarm: 42)
    trainers_num: int = 4  # trainers; trainer i fits models[i % len(models)] (vSwarm: TrainersNum)
    concurrent_training: bool = True  # true: all trainers are called at once; false: one after another
    models: tuple[ModelSpec, ...] = DEFAULT_MODELS  # base regressors (vSwarm's four); names, or {"model", "params"}
    cv_folds: int = 5  # folds of the out-of-fold predictions the meta-model is fitted on (vSwarm: 5)
    meta_c: float = 0.0  # the meta-model's inverse L2 strength (LogisticRegression C); 0: no penalty (README: vSwarm's is 1.0)
    transfer: str = "store"  # inline: in request/answer bodies; store: chunked blobs in the job's store; s3: objects
    # in the function's S3-compatible space (its env `s3_url`, secret files s3-access-key, s3-secret-key)
    store: str = ""  # a store the function has configured, by name (its `stores`); "": its store_url
    call_timeout_s: float = 300.0  # how long the driver waits for each function it calls

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["models"] = [m.to_dict() for m in self.models]
        return out


FIELDS = {f.name: f for f in dataclasses.fields(StackingConfig)}


def _bool(field: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE + FALSE:
        return value.strip().lower() in TRUE
    raise ConfigError(field, f"must be true or false, got {value!r}")


def _transfer(field: str, value: Any) -> str:
    return _choice(field, value, TRANSFERS)


def check_transfer(config: "StackingConfig", env: Mapping[str, str]) -> None:
    """A 400 on `transfer` when it is s3 and the function has no S3 space configured (nothing is contacted)."""
    if config.transfer != "s3":
        return
    from faasgd.channels import configured_space

    try:
        configured_space(env)
    except ConfigError as e:
        raise ConfigError("transfer", f"s3 is not available on this function ({e}); set its s3_url and the secret "
                                      f"files s3-access-key, s3-secret-key, or use inline or store") from None


PARSERS = {
    "n_samples": lambda f, v: _int(f, v, 20, 100_000),
    "n_features": lambda f, v: _int(f, v, 2, 100_000),
    "test_fraction": lambda f, v: _float(f, v, 0.0, 0.9, low_open=True),
    "seed": lambda f, v: _int(f, v, 0, 2**31 - 1),
    "trainers_num": lambda f, v: _int(f, v, 1, 64),
    "concurrent_training": _bool,
    "models": parse_models,
    "cv_folds": lambda f, v: _int(f, v, 2, 20),
    "meta_c": lambda f, v: _float(f, v, 0.0, 1e6),
    "transfer": _transfer,
    "store": lambda f, v: read_setting({"store": v}, "store") if isinstance(v, str) else _bad_store(f, v),
    "call_timeout_s": lambda f, v: _float(f, v, 0.0, 86400.0, low_open=True),
}


def _bad_store(field: str, value: Any):
    raise ConfigError(field, f"must be the name of a configured store (like redis or memcached), got {value!r}")


def load_stacking(env: Mapping[str, str] | None, body: Any) -> StackingConfig:
    """Defaults, then known keys from `env`, then the body (a JSON object of config keys): the one parse."""
    if not isinstance(body, Mapping):
        raise ConfigError("body", f"must be a JSON object (or a form) of config keys, got {type(body).__name__}")
    for key in body:
        if key in LOCATION_KEYS or key in S3_LOCATION_KEYS:
            raise ConfigError(key, "a store's location comes from the function's configuration, never from a "
                                   "request; name one of its stores with `store`")
        if key not in FIELDS:
            raise ConfigError(str(key), f"unknown key (known keys: {', '.join(FIELDS)})")
    values: dict[str, Any] = {}
    for key in FIELDS:
        if env is not None and key in env and str(env[key]).strip() != "":
            values[key] = PARSERS[key](key, env[key])
    for key, value in body.items():
        if value is not None:
            values[key] = PARSERS[key](key, value)
    config = StackingConfig(**values)
    check_sizes(config)
    if env is not None:
        check_transfer(config, env)
    return config


def check_sizes(config: StackingConfig) -> None:
    """What the sizes must allow together: both classes in both splits, cv folds, KNN's neighbours."""
    test_rows = held_out_rows(config)
    train_rows = config.n_samples - test_rows
    if test_rows < 2 or train_rows < 2 * config.cv_folds:
        raise ConfigError("n_samples", f"{config.n_samples} rows at test_fraction={config.test_fraction} leave "
                                       f"{train_rows} training and {test_rows} held-out rows; need >= "
                                       f"{2 * config.cv_folds} (2 x cv_folds) and >= 2")
    fold_rows = train_rows - -(-train_rows // config.cv_folds)  # the fewest rows a fold is fitted on
    for spec in config.models:
        k = spec.params.get("n_neighbors")
        if k is not None and k > fold_rows:
            raise ConfigError("models", f"{spec.name} n_neighbors={k} is more than the {fold_rows} rows each "
                                        f"cross-validation fold is fitted on")


def held_out_rows(config: StackingConfig) -> int:
    """Rows held out for the scores (as scikit-learn's train_test_split counts them: ceil)."""
    return -(-int(round(config.n_samples * config.test_fraction * 1e6)) // 1_000_000)


def config_from_record(record: Mapping[str, Any]) -> StackingConfig:
    """Rebuild the config stored with a job (strict: only config keys)."""
    return load_stacking(None, dict(record))

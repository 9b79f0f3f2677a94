"""A stacking job's configuration: one frozen pydantic model, a type, bounds and a description per field.

Keys are the same in the stacking functions' stack.yml `environment`, JSON request bodies and the job's
`config` record. Precedence: defaults < environment < request body. Unknown keys in a body are a 400 naming
the key; so are bad values; a store's location is never taken from a request (a request names a store).
"""

from __future__ import annotations

from typing import Annotated, Any, Mapping

from pydantic import Field, PlainValidator

from faasgd.config.base import (LOCATION_KEYS, Choice, ConfigModel, Flag, Float, Int, StoreName, body_values,
                                 check_body, describe, environment_values, refuse_locations, require_object)
from faasgd.errors import ConfigError
from faasgd.stacking.models import DEFAULT_MODELS, ModelSpec, parse_models
from faasgd.store.expiry import DEFAULT_KEEP_S, MAX_KEEP_S, MIN_KEEP_S

TRANSFERS = ("inline", "store", "s3")  # vSwarm's TRANSFER_TYPE; s3: the function's S3-compatible space (faasgd.channels)
AVAILABLE_TRANSFERS = TRANSFERS
S3_LOCATION_KEYS = ("s3_url",)  # the function's own S3 location (faasgd.channels.configured), never a request's
Models = Annotated[tuple[ModelSpec, ...], PlainValidator(lambda value, info: parse_models(info.field_name, value))]


class StackingConfig(ConfigModel):
    """Everything that defines a stacking job; stored with the job so every function reads the same."""

    n_samples: Int(20, 100_000) = Field(300, description="rows of the generated classification set (vSwarm: 300)")
    n_features: Int(2, 100_000) = Field(1024, description="features per row (vSwarm: 1024)")
    test_fraction: Float(0.0, 0.9, low_open=True) = Field(0.3, description=(
        "share of the rows held out (stratified) for base_scores and ensemble_score"))
    seed: Int(0, 2**31 - 1) = Field(42, description="the dataset's, the split's and every model's random_state")
    trainers_num: Int(1, 64) = Field(4, description="trainers; trainer i fits models[i % len(models)]")
    concurrent_training: Flag = Field(True, description="true: all trainers are called at once; false: one after "
                                                        "another")
    models: Models = Field(DEFAULT_MODELS, description=(
        "base regressors (vSwarm's four): names, or {\"model\", \"params\"} objects; comma-separated names in env"))
    cv_folds: Int(2, 20) = Field(5, description="folds of the out-of-fold predictions the meta-model is fitted on")
    meta_c: Float(0.0, 1e6) = Field(0.0, description=(
        "the meta-model's inverse L2 strength (LogisticRegression C); 0: no penalty (vSwarm's is 1.0)"))
    transfer: Choice(*TRANSFERS) = Field("store", description=(
        "inline: in request/answer bodies; store: chunked blobs in the job's store; s3: objects in the function's "
        "S3-compatible space (its s3_url and s3-* secret files)"))
    store: StoreName = Field("", description=(
        "a store the function has configured, by name (its `stores`); \"\": its store_url"))
    call_timeout_s: Float(0.0, 86400.0, low_open=True) = Field(300.0, description=(
        "how long the driver waits for each function it calls"))
    keep_s: Int(MIN_KEEP_S, MAX_KEEP_S) = Field(DEFAULT_KEEP_S, description=(
        "the job's keys in its store expire this many seconds after its last write (7 days; 1 s to 30 days); "
        "a result stays readable that long"))

    def to_dict(self) -> dict[str, Any]:
        out = {key: getattr(self, key) for key in FIELDS}
        out["models"] = [m.to_dict() for m in self.models]
        return out


FIELDS = dict(StackingConfig.model_fields)  # key -> pydantic FieldInfo (.default, .description)


def describe_fields() -> list[tuple[str, str, str]]:
    """(key, default as text, description) of every stacking config key: the configuration reference."""
    return describe(StackingConfig, FIELDS)


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


def load_stacking(env: Mapping[str, str] | None, body: Any) -> StackingConfig:
    """Defaults, then known keys from `env`, then the body (a JSON object of config keys): the one parse."""
    require_object(body)
    refuse_locations(body, LOCATION_KEYS + S3_LOCATION_KEYS, "name one of its stores with `store`")
    check_body(body, FIELDS)
    config = StackingConfig(**{**environment_values(StackingConfig, env), **body_values(StackingConfig, body)})
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

"""A training job's configuration: one frozen pydantic model, made of one model per concern.

The same lower-case key names are used everywhere: stack.yml `environment`, JSON request bodies,
CLI flags (with dashes), test.sh matrices and the job's `config` record in the store. Each field's
type, bounds, default and description are in faasgd.config.groups; attribute access is flat
(`config.batch_size`). Precedence: defaults < environment < request body / flags. Unknown keys in a
body or in flags are an error; the environment is only read for known keys (it holds much else).
"""

from __future__ import annotations

from typing import Any, Mapping

from faasgd.config.groups import (ACTIVATIONS, ALGORITHMS, CHANNELS, COMMUNICATIONS, MODELS, MODES, SYNCS,
                                  TOPOLOGIES, AlgorithmSettings, CommunicationSettings, DataSettings,
                                  InvocationSettings, ModelSettings, StoreSettings, StragglerSettings,
                                  TrainingSettings)
from faasgd.config.base import (LOCATION_KEYS, body_values, check_body, describe, environment_values,
                                 parse_values, refuse_locations, require_object)
from faasgd.data.catalog import N_CLASSES, is_tabular
from faasgd.data.tabular import GENERATED_CLASSES
from faasgd.errors import ConfigError
from faasgd.minibatch import merge_sources, split_global_batch
from faasgd.store.expiry import KEEP_PER_START
from faasgd.store.url import mask_password

__all__ = ["ACTIVATIONS", "ALGORITHMS", "CHANNELS", "COMMUNICATIONS", "FIELDS", "LOCATION_KEYS", "MODELS", "MODES",
           "RENAMED", "SYNCS", "TOPOLOGIES", "TrainConfig", "check_combination", "check_keys", "config_from_record",
           "describe_fields", "load_config", "load_request", "parse_value", "read_setting", "sync_pattern"]


class TrainConfig(StragglerSettings, AlgorithmSettings, StoreSettings, InvocationSettings, CommunicationSettings, TrainingSettings,
                  ModelSettings, DataSettings):
    """Everything that defines a training job; stored with the job so every worker reads the same."""

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready plain values (hidden_sizes as a list), store URLs with passwords masked:
        what job records, answers and outputs hold. A process needing a store's real URL has it from its
        own configuration, never from a record."""
        out = {key: getattr(self, key) for key in FIELDS}
        out["hidden_sizes"] = list(self.hidden_sizes)
        for key in LOCATION_KEYS:
            out[key] = mask_password(out[key])
        return out


# The keys in the order records, runs.csv's columns, flags and the reference list them (here, not the groups').
ORDER = ("dataset", "hidden_sizes", "activation", "dropout", "learning_rate", "batch_size", "global_batch_size",
         "number_of_workers", "n_fetch", "n_push", "update_rule", "communication", "push_codec", "invocation_mode",
         "max_epochs", "target_accuracy", "eval_every_samples", "seed", "resume_from", "store", "store_url", "train_samples",
         "test_samples", "validation_samples", "store_timeout_s", "store_topology", "local_store_url",
         "local_refresh_s", "lease_s", "start_timeout_s", "max_reinvocations", "profile_hz", "algorithm", "sync",
         "model", "cnn_arch", "n_clusters", "local_steps", "admm_rho", "round_timeout_s", "channel", "keep_s", "slow_factor", "slow_worker",
         "max_staleness", "backup_workers")
FIELDS = {key: TrainConfig.model_fields[key] for key in ORDER}  # key -> pydantic FieldInfo (.default, .description)
# Keys that were renamed: a body or flag using the old name is told the new one. `mode` clashed with
# of-watchdog's own setting (of-watchdog reads `mode` from the container's environment).
RENAMED = {"mode": ("invocation_mode", "of-watchdog reads `mode` from the function's environment as its own "
                                       "operating mode, so the job's key is invocation_mode")}


def describe_fields() -> list[tuple[str, str, str]]:
    """(key, default as text, description) of every config key, in FIELDS order: the configuration reference."""
    return describe(TrainConfig, FIELDS)


def check_keys(values: Mapping[str, Any]) -> None:
    """Reject keys that are not config fields, naming the first one (a renamed key: with its new name)."""
    check_body(values, FIELDS, RENAMED)


def load_config(env: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None) -> TrainConfig:
    """Defaults, then known keys from `env`, then `overrides` (unknown override keys are an error)."""
    overrides = overrides or {}
    check_keys(overrides)
    values = merge_sources(environment_values(TrainConfig, env), body_values(TrainConfig, overrides),
                           ("environment", "body (or flags)"))
    if values.get("invocation_mode") == "single":
        values["number_of_workers"] = 1  # single: one function trains on the whole dataset
    if values.get("global_batch_size"):
        workers = values.get("number_of_workers", FIELDS["number_of_workers"].default)
        values["batch_size"] = split_global_batch(values["global_batch_size"], workers)
    return check_combination(TrainConfig(**values))


def sync_pattern(config: TrainConfig) -> str:
    """The job's synchronisation: its `sync`, or the algorithm's own when "" (async for downpour, else reduce)."""
    return config.sync or ("async" if config.algorithm == "downpour" else "reduce")


def check_combination(config: TrainConfig) -> TrainConfig:
    """The config if its keys go together; ConfigError naming the key that does not fit the others."""
    sync, synchronous = sync_pattern(config), config.algorithm != "downpour"
    if synchronous and sync == "async":
        raise ConfigError("sync", f"{config.algorithm} runs in synchronous rounds: must be reduce or reduce_scatter, "
                                  "got 'async' (async is downpour's)")
    if not synchronous and sync != "async":
        raise ConfigError("sync", f"downpour is asynchronous: must be async (or empty), got {sync!r}; "
                                  "reduce and reduce_scatter are for grad_avg, model_avg and admm")
    if not synchronous and config.channel != "store":
        raise ConfigError("channel", "downpour adds pushes atomically in the job's store: there is no atomic add on "
                                     f"S3 or DynamoDB items, so it needs channel store, got {config.channel!r}")
    if not synchronous and config.model not in ("mlp", "cnn"):
        raise ConfigError("model", f"downpour trains the mlp or cnn; {config.model} trains with grad_avg, model_avg or admm")
    if config.algorithm == "admm" and config.model not in ("lr", "svm"):
        raise ConfigError("model", f"admm is consensus ADMM for the convex models: must be lr or svm, got {config.model!r}")
    classes = N_CLASSES.get(config.dataset, GENERATED_CLASSES.get(config.dataset))  # None: a libsvm file's
    if config.model == "svm" and classes not in (None, 2):
        raise ConfigError("model", f"the linear SVM is binary; {config.dataset} has {classes} "
                                   "classes (use lr, or a binary data set: higgs-like, rcv1-like, a binary libsvm file)")
    if config.model == "kmeans" and config.algorithm != "model_avg":
        raise ConfigError("algorithm", "kmeans runs LambdaML's rounds of centroids merged from every shard's sums "
                                       f"and counts: must be model_avg, got {config.algorithm!r}")
    if config.model in ("mlp", "cnn") and is_tabular(config.dataset):
        raise ConfigError("dataset", f"the {config.model} trains on the image data sets; {config.dataset} is for lr and svm")
    if config.model == "cnn" and config.dropout > 0:
        raise ConfigError("dropout", f"the cnn has no dropout layer: must be 0 with model cnn, got {config.dropout}")
    if synchronous and config.push_codec != "f32":
        raise ConfigError("push_codec", f"{config.algorithm} exchanges whole objects in rounds, not pushes: must be "
                                        f"f32, got {config.push_codec!r} (f16 and topk are for downpour)")
    if synchronous and config.invocation_mode == "single":
        raise ConfigError("invocation_mode", f"{config.algorithm} needs every worker in its rounds: loop or per-iteration")
    check_stragglers(config, synchronous, sync)
    if config.keep_s < KEEP_PER_START * config.start_timeout_s:
        raise ConfigError("keep_s", f"must be at least {KEEP_PER_START} x start_timeout_s "
                                    f"({KEEP_PER_START * config.start_timeout_s:g} s) so the job's keys outlive its "
                                    f"workers' start (a worker may start start_timeout_s after the setup, and its "
                                    f"writes renew the keys a quarter of keep_s later), got keep_s {config.keep_s} "
                                    f"with start_timeout_s {config.start_timeout_s:g}: raise keep_s or lower "
                                    "start_timeout_s")
    return config


def check_stragglers(config: TrainConfig, synchronous: bool, sync: str) -> None:
    """The straggler keys fit the job: a slowed worker it has, each mitigation its own algorithm's."""
    workers = config.number_of_workers
    if config.slow_worker >= workers:
        raise ConfigError("slow_worker", f"must be a worker of the job, -1 (every one) to {workers - 1}, "
                                         f"got {config.slow_worker}")
    if config.max_staleness and synchronous:
        raise ConfigError("max_staleness", f"bounds downpour's asynchronous lead; {config.algorithm}'s rounds are in "
                                           f"step already: must be 0, got {config.max_staleness} (backup_workers "
                                           "mitigates a slow worker there)")
    backup = config.backup_workers
    if backup and (config.algorithm not in ("grad_avg", "model_avg") or config.model == "kmeans"):
        raise ConfigError("backup_workers", "a round merged without a late worker is grad_avg's or model_avg's (not "
                                            f"admm's, nor kmeans'): must be 0 with {config.algorithm} "
                                            f"{config.model}, got {backup} (max_staleness bounds downpour's lead)")
    if backup >= workers:
        raise ConfigError("backup_workers", f"must be below number_of_workers ({workers}): a round merges "
                                            f"number_of_workers - backup_workers >= 1 contributions, got {backup}")
    if backup and sync != "reduce":
        raise ConfigError("backup_workers", f"a round with backup workers has one merger (worker 0): needs sync "
                                            f"reduce, got {sync!r}")


def read_setting(env: Mapping[str, str], key: str) -> Any:
    """One config key from the environment (parsed and checked), else its default."""
    raw = env.get(key)
    if raw is None or str(raw).strip() == "":
        return FIELDS[key].default
    return parse_value(key, raw)


def parse_value(key: str, value: Any) -> Any:
    """One config key's value (typed or text), parsed and checked."""
    return parse_values(TrainConfig, {key: value})[key]


def load_request(env: Mapping[str, str], body: Any) -> TrainConfig:
    """A request's config: the function's environment, then the body, which must be a JSON object (or a form)
    of config keys other than store locations. The one parse of a request."""
    require_object(body)
    refuse_locations(body, LOCATION_KEYS, "name one of its stores with `store` (e.g. \"store\": \"memcached\")")
    return load_config(env, body)


def config_from_record(record: Mapping[str, Any]) -> TrainConfig:
    """Rebuild the config stored with a job (strict: the record must only hold config keys). A record with a
    global_batch_size holds the batch_size split from it too: that is recomputed, and must match."""
    values = dict(record)
    if values.get("global_batch_size") is None or not parse_value("global_batch_size", values["global_batch_size"]):
        return load_config(None, values)
    per_worker = values.pop("batch_size", None)
    config = load_config(None, values)
    if per_worker is not None and parse_value("batch_size", per_worker) != config.batch_size:
        raise ConfigError("batch_size", f"the record's {per_worker!r} is not its global_batch_size "
                                        f"{config.global_batch_size} split among {config.number_of_workers} workers "
                                        f"({config.batch_size})")
    return config

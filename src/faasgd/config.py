"""A training job's configuration: one frozen dataclass, one comment per field.

The same lower-case key names are used everywhere: stack.yml `environment`, JSON request bodies,
CLI flags (with dashes), test.sh matrices and the job's `config` record in the store.
Precedence: defaults < environment < request body / flags. Unknown keys in a body or in flags are
an error; the environment is only read for known keys (it holds much else).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from faasgd.data.catalog import N_CLASSES, check_dataset_name, is_tabular
from faasgd.data.tabular import GENERATED_CLASSES
from faasgd.errors import ConfigError
from faasgd.minibatch import MAX_BATCH, MAX_GLOBAL_BATCH, merge_sources, split_global_batch
from faasgd.model.cnn_layout import ARCHS as CNN_ARCHS
from faasgd.store.push_codec import parse_codec
from faasgd.store.update_rule import RULES
from faasgd.store.url import mask_url, parse_store_url

ACTIVATIONS = ("tanh", "relu")
MODES = ("loop", "per-iteration", "single")
TOPOLOGIES = ("global", "node-local")
COMMUNICATIONS = ("background", "coalesce", "blocking")
ALGORITHMS = ("downpour", "grad_avg", "model_avg", "admm")  # README "LambdaML's algorithms"
SYNCS = ("", "async", "reduce", "reduce_scatter")  # "": the algorithm's own (async for downpour, else reduce)
MODELS = ("mlp", "lr", "svm", "kmeans", "cnn")
CHANNELS = ("store", "s3")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training job; stored with the job so every worker reads the same."""

    dataset: str = "fashion-mnist"  # fashion-mnist, emnist-{balanced,bymerge,byclass,digits,letters,mnist}, synthetic
    #   or fashion-mnist-x{2,4,8,16,21}: Fashion-MNIST augmented F-fold, made per worker shard (data/augmented.py)
    hidden_sizes: tuple[int, ...] = (100,)  # units per hidden layer; "256,128" in env/flags
    activation: str = "tanh"  # hidden-layer non-linearity: tanh or relu
    dropout: float = 0.0  # inverted-dropout drop probability on hidden layers, in [0, 1)
    learning_rate: float = 0.1  # step size on the batch-averaged gradient, > 0 (adagrad: its lr, best near 0.05)
    batch_size: int = 128  # samples per minibatch, per worker (set by global_batch_size when that is given)
    global_batch_size: int = 0  # rows a step across all workers, split evenly among them (minibatch.py); 0: not
    #   set, batch_size is per worker. Refused beside batch_size in one body/flags/environment, or with a remainder
    number_of_workers: int = 2  # data-parallel workers, each with its own shard
    n_fetch: int = 10  # fetch the global parameters every n_fetch minibatches
    n_push: int = 10  # push the accumulated update every n_push minibatches
    update_rule: str = "average"  # chosen from bench/scaling.py (README "Update rules"): how the store adds a push: sum, average (/ number_of_workers), adagrad (store/update_rule.py)
    communication: str = "background"  # background | coalesce | blocking; sgd/comm.py and README
    # background: fetches and pushes overlap training, a push every n_push steps exactly; coalesce: never
    # wait for the store, a push or fetch due while one is in flight joins the next (n_fetch and n_push
    # become the shortest periods); blocking: wait for each round trip
    push_codec: str = "f32"  # how pushes travel (store/push_codec.py, README "Compressed pushes"): f32 | f16 |
    # topk:FRACTION (0 < FRACTION < 1: the largest entries only); f16 and topk keep the rest as a residual for later pushes
    invocation_mode: str = "loop"  # loop: all epochs in one invocation; per-iteration: one epoch per invocation; single: one worker
    max_epochs: int = 20  # upper bound on passes over each worker's shard
    target_accuracy: float = 0.85  # validation accuracy that ends the job (1.0: run all max_epochs)
    eval_every_samples: int = 0  # the stop rule's period in samples of all workers: the worker whose push carries
    #   the job past a multiple of it evaluates the parameters that push returned (downpour; the epoch ends evaluate
    #   too); 0: a quarter of the training rows. The same for 1 and W workers, so samples_to_target compare alike
    seed: int = 0  # network init uses seed; worker i shuffles and drops out with seed + i
    store: str = ""  # a store the function has configured, by name (its environment's `stores`); "": its store_url
    store_url: str = "redis://127.0.0.1:6379/0"  # redis://[:password@]host:port/db, memcached://host:port (not in requests)
    train_samples: int = 0  # use only the first N training rows (0: all); for quick runs
    test_samples: int = 0  # evaluate on the first N test rows (0: all)
    validation_samples: int = 0  # rows held out from the end of the training rows for the stop rule, never trained
    #   on (0: a tenth of the training rows, at most 5000, at least 1); must leave a training row per worker
    store_timeout_s: float = 30.0  # how long a worker retries an unreachable store before failing
    store_topology: str = "global"  # global: fetch from store_url; node-local: fetch from local_store_url
    local_store_url: str = "memcached://127.0.0.1:11211"  # node-local cache (store_topology node-local; not in requests)
    local_refresh_s: float = 1.0  # node-local: how often the cache is refreshed from the global store
    lease_s: int = 30  # a running invocation's lease and heartbeat, renewed every second, expire after this
    start_timeout_s: float = 120.0  # a launched worker silent for this long (no heartbeat yet) counts as lost
    max_reinvocations: int = 3  # a lost worker is re-invoked this often without progress, then the job fails
    profile_hz: float = 10.0  # resource samples per second of each worker (CPU, RSS, store bytes; profile/); 0: none
    # LambdaML's algorithms (README "LambdaML's algorithms"; sgd/sync_worker.py):
    algorithm: str = "downpour"  # downpour (asynchronous pushes) | grad_avg | model_avg | admm (synchronous rounds)
    sync: str = ""  # async (downpour only) | reduce | reduce_scatter; "": the algorithm's own (async / reduce)
    model: str = "mlp"  # mlp | lr (logistic regression) | svm (linear, binary) | kmeans (model_avg); admm: lr or svm
    #   | cnn (tf.keras, extra `tf`; images only; downpour, grad_avg, model_avg; README "Convolutional networks")
    cnn_arch: str = "lenet"  # model cnn: lenet | mobilenet (faasgd.model.cnn_layout; ReLU, no dropout)
    n_clusters: int = 0  # kmeans: the clusters k (0: the data set's classes)
    local_steps: int = 1  # model_avg: local SGD steps between averagings; admm: local gradient steps per round
    admm_rho: float = 0.1  # admm: the penalty rho of consensus ADMM (faasgd.convex.admm)
    round_timeout_s: float = 60.0  # synchronous rounds: a barrier not passed within this fails the round (504)
    channel: str = "store"  # where rounds' objects go: store (the job's Redis/Memcached) | s3 (the function's s3_url)

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready plain values (hidden_sizes as a list), store URLs with passwords masked:
        what job records, answers and outputs hold. A process needing a store's real URL has it from its
        own configuration, never from a record."""
        out = dataclasses.asdict(self)
        out["hidden_sizes"] = list(self.hidden_sizes)
        for key in LOCATION_KEYS:
            out[key] = mask_url(out[key])
        return out


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
# Where stores are: set by the function's own configuration (environment, secrets), never by a request, so
# nothing a caller sends makes a function connect elsewhere or send a password away. A request names a store.
LOCATION_KEYS = ("store_url", "local_store_url")
_STORE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}\Z")
# Keys that were renamed: a body or flag using the old name is told the new one. `mode` clashed with
# of-watchdog's own setting (it reads `mode` from the container's environment: OPENFAAS.md 1.8).
RENAMED = {"mode": ("invocation_mode", "of-watchdog reads `mode` from the function's environment as its own "
                                       "operating mode, so the job's key is invocation_mode")}


def _int(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise ConfigError(field, f"must be an integer in [{low}, {high}], got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ConfigError(field, f"must be an integer in [{low}, {high}], got {value!r}") from None
    if not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(field, f"must be an integer in [{low}, {high}], got {value!r}")
    return value


def _float(field: str, value: Any, low: float, high: float, *, low_open=False, high_open=False) -> float:
    lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
    message = f"must be a number in {lo}{low}, {high}{hi}, got {value!r}"
    if isinstance(value, bool):
        raise ConfigError(field, message)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ConfigError(field, message) from None
    if not isinstance(value, (int, float)):
        raise ConfigError(field, message)
    value = float(value)
    if value != value or value < low or value > high or (low_open and value == low) or (high_open and value == high):
        raise ConfigError(field, message)
    return value


def _choice(field: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip() not in allowed:
        raise ConfigError(field, f"must be one of {', '.join(allowed)}, got {value!r}")
    return value.strip()


def _hidden_sizes(field: str, value: Any) -> tuple[int, ...]:
    message = f"must be a list of 1 to 8 layer sizes in [1, 65536], e.g. [100] or \"256,128\", got {value!r}"
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, str):
        value = [part for part in value.replace(" ", "").split(",") if part]
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 8:
        raise ConfigError(field, message)
    try:
        return tuple(_int(field, v, 1, 65536) for v in value)
    except ConfigError:
        raise ConfigError(field, message) from None


def _store_url(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(field, f"must be a URL like redis://host:6379/0 or memcached://host:11211, got {value!r}")
    try:
        parse_store_url(value.strip())
    except ConfigError as error:
        raise ConfigError(field, str(error).split(": ", 1)[1]) from None
    return value.strip()


def _store_name(field: str, value: Any) -> str:
    if not isinstance(value, str) or not (value == "" or _STORE_NAME.match(value.strip())):
        raise ConfigError(field, f"must be the name of a configured store (like redis or memcached), got {value!r}")
    return value.strip()


# Each key's parser: coerce one raw value (typed JSON or an environment string) and check its range.
PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "dataset": lambda _field, value: check_dataset_name(value),
    "hidden_sizes": _hidden_sizes,
    "activation": lambda field, value: _choice(field, value, ACTIVATIONS),
    "invocation_mode": lambda field, value: _choice(field, value, MODES),
    "update_rule": lambda field, value: _choice(field, value, RULES),
    "store_topology": lambda field, value: _choice(field, value, TOPOLOGIES),
    "communication": lambda field, value: _choice(field, value, COMMUNICATIONS),
    "push_codec": lambda _field, value: str(parse_codec(value)),
    "local_refresh_s": lambda field, value: _float(field, value, 0.0, 3600.0, low_open=True),
    "lease_s": lambda field, value: _int(field, value, 1, 86400),
    "start_timeout_s": lambda field, value: _float(field, value, 0.0, 86400.0, low_open=True),
    "profile_hz": lambda field, value: _float(field, value, 0.0, 1000.0),
    "max_reinvocations": lambda field, value: _int(field, value, 0, 100),
    "dropout": lambda field, value: _float(field, value, 0.0, 1.0, high_open=True),
    "learning_rate": lambda field, value: _float(field, value, 0.0, 100.0, low_open=True),
    "target_accuracy": lambda field, value: _float(field, value, 0.0, 1.0, low_open=True),
    "store_timeout_s": lambda field, value: _float(field, value, 0.0, 86400.0, low_open=True),
    "batch_size": lambda field, value: _int(field, value, 1, MAX_BATCH),
    "global_batch_size": lambda field, value: _int(field, value, 0, MAX_GLOBAL_BATCH),
    "eval_every_samples": lambda field, value: _int(field, value, 0, 10**12),
    "number_of_workers": lambda field, value: _int(field, value, 1, 1024),
    "n_fetch": lambda field, value: _int(field, value, 1, 1_000_000),
    "n_push": lambda field, value: _int(field, value, 1, 1_000_000),
    "max_epochs": lambda field, value: _int(field, value, 1, 100_000),
    "seed": lambda field, value: _int(field, value, 0, 2**31 - 1),
    "algorithm": lambda field, value: _choice(field, value, ALGORITHMS),
    "sync": lambda field, value: "" if isinstance(value, str) and not value.strip() else _choice(field, value, SYNCS),
    "model": lambda field, value: _choice(field, value, MODELS),
    "channel": lambda field, value: _choice(field, value, CHANNELS),
    "cnn_arch": lambda field, value: _choice(field, value, CNN_ARCHS),
    "n_clusters": lambda field, value: _int(field, value, 0, 4096),
    "local_steps": lambda field, value: _int(field, value, 1, 100_000),
    "admm_rho": lambda field, value: _float(field, value, 0.0, 1e6, low_open=True),
    "round_timeout_s": lambda field, value: _float(field, value, 0.0, 86400.0, low_open=True),
    "train_samples": lambda field, value: _int(field, value, 0, 100_000_000),
    "test_samples": lambda field, value: _int(field, value, 0, 100_000_000),
    "validation_samples": lambda field, value: _int(field, value, 0, 100_000_000),
    "store": _store_name,
    **{key: _store_url for key in LOCATION_KEYS},
}


def _parse(field: str, value: Any) -> Any:
    """Coerce one raw value (typed JSON or an environment string) and check its range."""
    if field not in PARSERS:
        raise ConfigError(field, f"unknown key (known keys: {', '.join(FIELDS)})")
    return PARSERS[field](field, value)


def check_keys(values: Mapping[str, Any]) -> None:
    """Reject keys that are not config fields, naming the first one."""
    if not isinstance(values, Mapping):
        raise ConfigError("body", f"must be a JSON object of config keys, got {type(values).__name__}")
    for key in values:
        if key in RENAMED:
            new, why = RENAMED[key]
            raise ConfigError(str(key), f"renamed to {new}: {why}")
        if key not in FIELDS:
            raise ConfigError(str(key), f"unknown key (known keys: {', '.join(FIELDS)})")


def load_config(env: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None) -> TrainConfig:
    """Defaults, then known keys from `env`, then `overrides` (unknown override keys are an error)."""
    overrides = overrides or {}
    check_keys(overrides)
    from_env = {key: _parse(key, env[key]) for key in FIELDS
                if env is not None and key in env and str(env[key]).strip() != ""}
    given = {key: _parse(key, value) for key, value in overrides.items() if value is not None}
    values = merge_sources(from_env, given, ("environment", "body (or flags)"))
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
                                     f"S3, so it needs channel store, got {config.channel!r}")
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
    return config


def read_setting(env: Mapping[str, str], key: str) -> Any:
    """One config key from the environment (parsed and checked), else its default."""
    raw = env.get(key)
    if raw is None or str(raw).strip() == "":
        return FIELDS[key].default
    return _parse(key, raw)


def load_request(env: Mapping[str, str], body: Any) -> TrainConfig:
    """A request's config: the function's environment, then the body, which must be a JSON object (or a form)
    of config keys other than store locations. The one parse of a request."""
    if not isinstance(body, Mapping):  # null, [], 0, "" ... never start a default job by accident
        raise ConfigError("body", f"must be a JSON object (or a form) of config keys, got {type(body).__name__}")
    for key in LOCATION_KEYS:
        if key in body:
            raise ConfigError(key, "a store's location comes from the function's configuration, never from a "
                                   "request; name one of its stores with `store` (e.g. \"store\": \"memcached\")")
    return load_config(env, body)


def config_from_record(record: Mapping[str, Any]) -> TrainConfig:
    """Rebuild the config stored with a job (strict: the record must only hold config keys). A record with a
    global_batch_size holds the batch_size split from it too: that is recomputed, and must match."""
    values = dict(record)
    if values.get("global_batch_size") is None or not _parse("global_batch_size", values["global_batch_size"]):
        return load_config(None, values)
    per_worker = values.pop("batch_size", None)
    config = load_config(None, values)
    if per_worker is not None and _parse("batch_size", per_worker) != config.batch_size:
        raise ConfigError("batch_size", f"the record's {per_worker!r} is not its global_batch_size "
                                        f"{config.global_batch_size} split among {config.number_of_workers} workers "
                                        f"({config.batch_size})")
    return config

"""A training job's settings, one model per concern; faasgd.config.TrainConfig inherits them all.

Every field has a type (with its bounds), a default and a one-line description: the descriptions are the
CLI's --help and the documentation's configuration reference (faasgd.config.describe_fields).
"""

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo

from faasgd.config.base import Choice, ConfigModel, Float, Int, StoreName
from faasgd.data.catalog import check_dataset_name
from faasgd.errors import ConfigError
from faasgd.minibatch import MAX_BATCH, MAX_GLOBAL_BATCH
from faasgd.model.activations import ACTIVATIONS
from faasgd.model.cnn_layout import ARCHS as CNN_ARCHS
from faasgd.store.keys import check_job_id
from faasgd.store.expiry import DEFAULT_KEEP_S, KEEP_PER_START, MAX_KEEP_S, MIN_KEEP_S
from faasgd.store.push_codec import parse_codec
from faasgd.store.update_rule import RULES
from faasgd.store.url import parse_store_url

MODES = ("loop", "per-iteration", "single")
TOPOLOGIES = ("global", "node-local")
COMMUNICATIONS = ("background", "coalesce", "blocking")
ALGORITHMS = ("downpour", "grad_avg", "model_avg", "admm")
SYNCS = ("", "async", "reduce", "reduce_scatter")  # "": the algorithm's own (async for downpour, else reduce)
MODELS = ("mlp", "lr", "svm", "kmeans", "cnn")
CHANNELS = ("store", "s3", "dynamodb")
ROWS = Int(0, 100_000_000)


def split_sizes(value: Any) -> Any:
    """hidden_sizes as text ("256,128", the environment's and flags' form) or one number: a list."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, str):
        return [part for part in value.replace(" ", "").split(",") if part]
    return value


def read_store_url(value: Any, info: ValidationInfo) -> str:
    if not isinstance(value, str):
        raise ConfigError(info.field_name, f"must be a URL like redis://host:6379/0 or memcached://host:11211, "
                                           f"got {value!r}")
    try:
        parse_store_url(value.strip())
    except ConfigError as error:
        raise ConfigError(info.field_name, str(error).split(": ", 1)[1]) from None
    return value.strip()


HiddenSizes = Annotated[tuple[Int(1, 65536), ...], BeforeValidator(split_sizes), Field(min_length=1, max_length=8)]
StoreUrl = Annotated[str, BeforeValidator(read_store_url)]
Dataset = Annotated[str, BeforeValidator(check_dataset_name)]
PushCodec = Annotated[str, BeforeValidator(lambda value: str(parse_codec(value)))]


def read_job_id(value: Any, info: ValidationInfo) -> str:
    """A job id, or "" for none."""
    if value == "":
        return value
    try:
        return check_job_id(value)
    except ConfigError as error:
        raise ConfigError(info.field_name, str(error).split(": ", 1)[1]) from None


ResumeFrom = Annotated[str, BeforeValidator(read_job_id)]


class DataSettings(ConfigModel):
    """Which data set, and how much of it."""

    dataset: Dataset = Field("fashion-mnist", description=(
        "the data set: fashion-mnist, fashion-mnist-x{2,4,8,16,21} (augmented per shard), emnist-{balanced,bymerge,"
        "byclass,digits,letters,mnist}, synthetic, higgs-like, rcv1-like, blobs-like or libsvm:PATH"))
    train_samples: ROWS = Field(0, description="use only the first N training rows (0: all); for quick runs")
    test_samples: ROWS = Field(0, description="evaluate on the first N test rows (0: all)")
    validation_samples: ROWS = Field(0, description=(
        "rows held out from the end of the training rows for the stop rule, never trained on (0: a tenth of the "
        "training rows, at most 5000, at least 1); must leave a training row per worker"))


class ModelSettings(ConfigModel):
    """The network (or convex model) every worker trains."""

    model: Choice(*MODELS) = Field("mlp", description=(
        "mlp | lr (logistic regression) | svm (linear, binary) | kmeans (model_avg) | cnn (tf.keras, extra `tf`; "
        "images only); admm trains lr or svm"))
    hidden_sizes: HiddenSizes = Field((100,), description="units per hidden layer of the mlp; \"256,128\" in env/flags",
                                      json_schema_extra={"rule": "a list of 1 to 8 layer sizes in [1, 65536], "
                                                                 "e.g. [100] or \"256,128\""})
    activation: Choice(*ACTIVATIONS) = Field("tanh", description="the hidden layers' non-linearity")
    dropout: Float(0.0, 1.0, high_open=True) = Field(0.0, description="inverted-dropout drop probability on hidden "
                                                                      "layers (the cnn has none: 0)")
    cnn_arch: Choice(*CNN_ARCHS) = Field("lenet", description="model cnn's architecture (ReLU, no dropout)")
    n_clusters: Int(0, 4096) = Field(0, description="kmeans: the clusters k (0: the data set's classes)")


class TrainingSettings(ConfigModel):
    """The optimisation: step, batch, epochs and the stop rule."""

    learning_rate: Float(0.0, 100.0, low_open=True) = Field(0.1, description=(
        "step size on the batch-averaged gradient (adagrad: its learning rate, best near 0.05)"))
    batch_size: Int(1, MAX_BATCH) = Field(128, description=(
        "samples per minibatch, per worker (set by global_batch_size when that is given)"))
    global_batch_size: Int(0, MAX_GLOBAL_BATCH) = Field(0, description=(
        "rows a step across all workers, split evenly among them; 0: not set, batch_size is per worker; never "
        "beside batch_size in one source"))
    max_epochs: Int(1, 100_000) = Field(20, description="upper bound on passes over each worker's shard")
    target_accuracy: Float(0.0, 1.0, low_open=True) = Field(0.85, description=(
        "validation accuracy that ends the job (1.0: run all max_epochs)"))
    eval_every_samples: Int(0, 10**12) = Field(0, description=(
        "the stop rule's period in samples of all workers (the push crossing a multiple evaluates); 0: half the "
        "training rows"))
    seed: Int(0, 2**31 - 1) = Field(0, description="network init uses seed; worker i shuffles and drops out with "
                                                   "seed + i")
    resume_from: ResumeFrom = Field("", description=(
        "an ended job (cancelled, failed or done) in the same store whose last parameters this job starts from, "
        "its samples and time to the target counted on (`faasgd resume`); \"\": from seed's initialisation"))


class CommunicationSettings(ConfigModel):
    """How workers exchange parameters with the store (Downpour)."""

    n_fetch: Int(1, 1_000_000) = Field(10, description="fetch the global parameters every n_fetch minibatches")
    n_push: Int(1, 1_000_000) = Field(10, description="push the accumulated update every n_push minibatches")
    update_rule: Choice(*RULES) = Field("average", description=(
        "how the store adds a push: sum, average (divided by number_of_workers) or adagrad"))
    communication: Choice(*COMMUNICATIONS) = Field("background", description=(
        "background: fetches and pushes overlap training; coalesce: never wait, a due exchange joins the one in "
        "flight; blocking: wait for each round trip"))
    push_codec: PushCodec = Field("f32", description=(
        "how pushes travel: f32 | f16 | topk:FRACTION (0 < FRACTION < 1, the largest entries only); f16 and topk "
        "keep the rest as a residual for later pushes"))


class InvocationSettings(ConfigModel):
    """How the workers run as function calls, and how lost ones are found."""

    number_of_workers: Int(1, 1024) = Field(2, description="data-parallel workers, each with its own shard")
    invocation_mode: Choice(*MODES) = Field("loop", description=(
        "loop: all epochs in one invocation; per-iteration: one epoch per invocation; single: one worker inside "
        "emnist-setup"))
    lease_s: Int(1, 86400) = Field(30, description=(
        "a running invocation's lease and heartbeat, renewed every second, expire after this"))
    start_timeout_s: Float(0.0, 86400.0, low_open=True) = Field(120.0, description=(
        "a launched worker silent for this long (no heartbeat yet) counts as lost"))
    max_reinvocations: Int(0, 100) = Field(3, description=(
        "a lost worker is re-invoked this often without progress, then the job fails"))
    profile_hz: Float(0.0, 1000.0) = Field(10.0, description=(
        "resource samples per second of each worker (CPU, RSS, store bytes); 0: none"))


class StoreSettings(ConfigModel):
    """Where the parameters live. Locations come from the function's configuration, never from a request."""

    store: StoreName = Field("", description=(
        "a store the function has configured, by name (its environment's `stores`); \"\": its store_url"))
    store_url: StoreUrl = Field("redis://127.0.0.1:6379/0", description=(
        "redis://[:password@]host:port/db or memcached://host:port (the function's own; never in a request)"))
    store_timeout_s: Float(0.0, 86400.0, low_open=True) = Field(30.0, description=(
        "how long a worker retries an unreachable store before failing"))
    store_topology: Choice(*TOPOLOGIES) = Field("global", description=(
        "global: fetch from store_url; node-local: fetch from local_store_url"))
    local_store_url: StoreUrl = Field("memcached://127.0.0.1:11211", description=(
        "the node-local cache (store_topology node-local; the function's own, never in a request)"))
    local_refresh_s: Float(0.0, 3600.0, low_open=True) = Field(1.0, description=(
        "node-local: how often the cache is refreshed from the global store"))
    keep_s: Int(MIN_KEEP_S, MAX_KEEP_S) = Field(DEFAULT_KEEP_S, description=(
        "the job's keys expire this many seconds after its last write (7 days; 1 s to 30 days, and at least "
        f"{KEEP_PER_START} x start_timeout_s: the keys outlive the workers' start); a result stays readable that long"))


class AlgorithmSettings(ConfigModel):
    """LambdaML's algorithms: asynchronous Downpour or synchronous rounds."""

    algorithm: Choice(*ALGORITHMS) = Field("downpour", description=(
        "downpour (asynchronous pushes) | grad_avg | model_avg | admm (synchronous rounds)"))
    sync: Choice(*SYNCS) = Field("", description=(
        "async (downpour only) | reduce | reduce_scatter; \"\": the algorithm's own (async / reduce)"))
    local_steps: Int(1, 100_000) = Field(1, description=(
        "model_avg: local SGD steps between averagings; admm: local gradient steps per round"))
    admm_rho: Float(0.0, 1e6, low_open=True) = Field(0.1, description="admm: the penalty rho of consensus ADMM")
    round_timeout_s: Float(0.0, 86400.0, low_open=True) = Field(60.0, description=(
        "synchronous rounds: a barrier not passed within this fails the round (504)"))
    channel: Choice(*CHANNELS) = Field("store", description=(
        "where rounds' objects go: store (the job's Redis/Memcached) | s3 (the function's s3_url) | "
        "dynamodb (the function's two DynamoDB tables)"))


class StragglerSettings(ConfigModel):
    """A worker slowed on purpose (fault studies), and the mitigations of slow workers (docs/explanation/stragglers.md)."""

    slow_factor: Float(1.0, 100.0) = Field(1.0, description=(
        "slow a worker down on purpose: each of its steps is followed by a sleep of (slow_factor - 1) x the step's "
        "measured time (no CPU burned); 1: none"))
    slow_worker: Int(-1, 1023) = Field(-1, description="the worker slow_factor slows (-1: every worker)")
    max_staleness: Int(0, 1_000_000) = Field(0, description=(
        "downpour: a worker more than this many steps ahead of the slowest running worker (steps as of each one's "
        "last push) waits for it; 0: no bound"))
    backup_workers: Int(0, 1023) = Field(0, description=(
        "grad_avg and model_avg with sync reduce: a round merges the first number_of_workers - backup_workers "
        "contributions and drops the late ones, whose workers take the merged round and go on; 0: every round waits "
        "for every worker"))

"""What a job may ask for, checked before anything is written or allocated.

From the config alone (and the data's headers), emnist-setup computes:
  * rows: every worker needs at least one training row (400 on number_of_workers otherwise);
  * slots: a loop-mode job's workers must all run at once, so at most `worker_slots` of them (the function's
    environment: emnist-train's scale.max x calls per replica; absent, no check): 400 on number_of_workers.
    Only a declared bound refuses: how many calls a cluster runs at once is not something setup can see.
    Below it, workers whose calls wait (too few replicas now) are shown in the job's status (job.waiting);
  * a worker's memory: its shard (downpour: raw uint8 rows; the synchronous rounds: float32), the evaluation
    rows (raw uint8), the parameters four times (its copy, the last fetch, the pending update, the gradient),
    a minibatch's activations both ways, plus the interpreter with its libraries; over the function's
    `memory_limit` -> 413. That is a fresh replica's interpreter: one that loaded TensorFlow for a cnn job
    renews itself in place once that job's worker has ended (functions/replica_renewal.py), so no later job
    meets TensorFlow it was not admitted with;
  * the job's bytes in the store: the weights (adagrad: with G beside them) and the job's model, plus on
    Memcached a push copy per worker (roll-forward, store/memcached_push.py); over `store_budget` -> 413.
The 413 names the setting to change (the one that weighs most) and the limit. `memory_limit` and
`store_budget` come from the function's environment (stack.yml keeps `memory_limit` equal to its
`limits.memory`: tests/unit/repository/test_stack_yml.py checks it); absent, that check is skipped.
"""

from __future__ import annotations

from typing import Mapping

from faasgd import data, job
from faasgd.data import tabular
from faasgd.config import TrainConfig
from faasgd.errors import ConfigError, TooLarge

INTERPRETER_BYTES = 160 << 20  # python, numpy, redis, pymemcache, httpx, flask, waitress: measured ~120 MiB
TENSORFLOW_BYTES = 700 << 20  # model cnn: TensorFlow loaded, a model built and stepped: measured ~660 MiB over python
UNITS = {"": 1, "k": 1000, "ki": 1 << 10, "m": 1000 ** 2, "mi": 1 << 20, "g": 1000 ** 3, "gi": 1 << 30}


def quantity(field: str, text: str) -> int:
    """A Kubernetes quantity (512Mi, 1Gi, 2G, 1000000) in bytes; ConfigError naming `field` otherwise."""
    raw = str(text).strip()
    number = raw.rstrip("KMGkmgi")
    unit = raw[len(number):].lower()
    if not number.isdigit() or unit not in UNITS:
        raise ConfigError(field, f"must be a size like 1Gi, 512Mi or a number of bytes, got {text!r}")
    return int(number) * UNITS[unit]


def mib(size: float) -> str:
    return f"{size / (1 << 20):,.0f} MiB"


def check_job(config: TrainConfig, env: Mapping[str, str], store_scheme: str) -> dict[str, int]:
    """Refuse a job that cannot run here; what it needs (bytes), when it can."""
    train_rows = data.count_rows(config.dataset, "train", config.train_samples)
    test_rows = data.count_rows(config.dataset, "test", config.test_samples)
    if train_rows < config.number_of_workers:
        raise ConfigError("number_of_workers", f"{config.number_of_workers} workers for {train_rows} training rows "
                                               f"of {config.dataset}: each worker needs at least one row")
    check_slots(config, env)
    held = data.validation_rows(train_rows, config.validation_samples, config.number_of_workers,
                                data.row_group(config.dataset))
    train_rows -= held  # the validation rows are held out of the training rows
    if config.model == "kmeans" and job.network_sizes(config)[1] > held:
        raise ConfigError("n_clusters", f"kmeans draws its {job.network_sizes(config)[1]} initial centroids from the "
                                        f"{held} validation rows: use fewer clusters or more validation_samples")
    input_dim, _ = data.dataset_info(config.dataset)
    tab = tabular.is_tabular(config.dataset)
    row = tabular.row_bytes(config.dataset) if tab else input_dim  # bytes of one raw row (sparse stays sparse)
    sizes = job.network_sizes(config)
    params = job.network(config).param_count  # the cnn's are its architecture's, not its sizes
    parts = {
        "number_of_workers": -(-train_rows // config.number_of_workers) * shard_row_bytes(config, row),  # the shard
        "test_samples": test_rows * row,  # evaluation rows, raw
        "validation_samples": held * row,  # the stop rule's rows, raw
        "hidden_sizes": 4 * params * 4,  # parameters, four buffers
        "batch_size": config.batch_size * (input_dim + 3 * sum(sizes[1:])) * 4,  # a minibatch, both ways
    }
    if config.model == "cnn":  # TensorFlow (model/cnn_keras.py); the feature maps of a minibatch count with it
        parts["model"] = TENSORFLOW_BYTES
    worker = INTERPRETER_BYTES + sum(parts.values())
    width = job.update_rule(config).width  # adagrad stores G beside each weight
    # the weights, the job's model (one kept copy; more only while workers cross at once), the push copies (Memcached, Redis Cluster)
    stored = params * 4 * (width + 1 + (config.number_of_workers if store_scheme in ("memcached", "redis-cluster") else 0))
    if config.algorithm != "downpour":  # per worker: two checkpoint slots (admm: 3 vectors each), two rounds' objects
        stored += params * 4 * config.number_of_workers * (2 * (3 if config.algorithm == "admm" else 1)
                                                           + (2 if config.channel == "store" else 0))
    if env.get("memory_limit"):
        limit = quantity("memory_limit", env["memory_limit"])
        if worker > limit:
            heaviest = max(parts, key=parts.get)
            raise TooLarge(heaviest, f"each worker would need {mib(worker)} ({mib(parts[heaviest])} of it set by "
                                     f"{heaviest}), over the function's memory_limit={env['memory_limit']}")
    if env.get("store_budget"):
        budget = quantity("store_budget", env["store_budget"])
        if stored > budget:
            raise TooLarge("hidden_sizes", f"the network's {params:,} parameters need {mib(stored)} in the store, "
                                           f"over the function's store_budget={env['store_budget']}")
    return {"worker_bytes": worker, "store_bytes": stored, "params": params}


def shard_row_bytes(config: TrainConfig, row: int) -> int:
    """Bytes a shard keeps per row: downpour keeps images raw (uint8, scaled per minibatch: downpour/worker.py); the
    synchronous rounds keep them float32 (lambdaml/sync_worker.py); tabular rows are float32 already (`row`)."""
    return row if tabular.is_tabular(config.dataset) or config.algorithm == "downpour" else row * 4


def check_slots(config: TrainConfig, env: Mapping[str, str]) -> None:
    """A loop-mode job with more workers than `worker_slots` would train in waves: 400 on number_of_workers."""
    if not env.get("worker_slots"):
        return
    text = str(env["worker_slots"]).strip()
    if not text.isdigit() or int(text) < 1:
        raise ConfigError("worker_slots", f"must be an integer >= 1 (the function's environment), got {text!r}")
    if (config.invocation_mode == "loop" or config.algorithm != "downpour") and config.number_of_workers > int(text):
        kind = "loop-mode" if config.algorithm == "downpour" else f"{config.algorithm} (every round needs them all)"
        raise ConfigError("number_of_workers", f"{config.number_of_workers} {kind} workers, but at most {text} run "
                                               f"at once here (worker_slots: emnist-train's scale.max x calls per "
                                               f"replica); the rest would wait for the first to finish")

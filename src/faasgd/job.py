"""A training job's records in the store: config, meta, per-worker progress, done flag, result.

Record names (inside the job's key space, see faasgd.store.keys):
  config          the TrainConfig as a dict; written last at creation, so its presence means "job exists"
  job             meta: created_at, layer sizes, parameter count, train/test sizes
  progress:<i>    worker i's record: its progress and checkpoint, written with each of its pushes
                  (faasgd.sgd.progress; `pushes` is how many of its pushes the store has applied)
  heartbeat:<i>   worker i is alive (expires lease_s after the last beat; faasgd.functions.supervise);
                  a running job's status lists the workers with neither record yet (`waiting`)
  done            the crossing: the first worker whose validation accuracy reached target_accuracy, with the
                  model it evaluated (faasgd.job_model): {"worker_id", "validation_accuracy", "test_accuracy",
                  "at", "samples", "epochs", "version", "model"}; written set-if-absent, after that model
  result          the final result record, written once (faasgd.result)
  lost            written when the store is found to have lost the job's state (restarted empty,
                  evicted): the job is failed with that reason, never re-initialised
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np

from faasgd import data, model
from faasgd.config import TrainConfig, config_from_record
from faasgd.errors import FaasgdError, JobNotFound, StoreError
from faasgd.store import ParameterStore, UpdateRule, keys


def new_job_id() -> str:
    """A fresh job id: short, unique, safe in every store's keys and in URLs."""
    return "j" + uuid.uuid4().hex[:15]


def network_sizes(config: TrainConfig) -> tuple[int, ...]:
    """Layer sizes of the job's network, input and classes taken from its dataset. A linear model (lr, svm) is
    (features, k), k = 1 for two classes: its flat layout (faasgd.convex.linear) is the MLP's without hidden layers."""
    input_dim, n_classes = data.dataset_info(config.dataset)
    if config.model == "kmeans":  # nearest-centroid assignment as a linear model (sgd/sync_worker.py)
        return (input_dim, config.n_clusters or n_classes)
    if config.model == "cnn":  # its layers are the architecture's (network below): (pixels, classes) here
        return (input_dim, n_classes)
    if config.model != "mlp":
        return (input_dim, 1 if n_classes == 2 else n_classes)
    return model.layer_sizes(input_dim, config.hidden_sizes, n_classes)


def network(config: TrainConfig) -> model.Network:
    """The job's network (faasgd.model.network): the cnn of its cnn_arch, else the MLP of its sizes (a linear
    model's (features, k) layout is the MLP's without hidden layers)."""
    sizes = network_sizes(config)
    if config.model == "cnn":
        return model.CNN.of(config.cnn_arch, *sizes)
    return model.MLP(sizes, config.activation, config.dropout)


def update_rule(config: TrainConfig) -> UpdateRule:
    """How the store adds the job's pushes: the config's rule, with the workers and step it scales by."""
    return UpdateRule(config.update_rule, workers=config.number_of_workers, learning_rate=config.learning_rate)


def holdout(config: TrainConfig) -> tuple[int, int]:
    """(training rows, validation rows) of the job: the validation rows are held out of the training split's
    end (data/shard.py). ConfigError naming validation_samples when too few training rows are left."""
    rows = data.count_rows(config.dataset, "train", config.train_samples)
    held = data.validation_rows(rows, config.validation_samples, config.number_of_workers,
                                data.row_group(config.dataset))  # an augmented set: whole source images
    return rows - held, held


def create_job(store: ParameterStore, config: TrainConfig, job_id: str | None = None) -> str:
    """Initialise the network (seeded) and write the job's records; returns the job id."""
    job_id = job_id or new_job_id()
    train_rows, validation_rows = holdout(config)  # refused before anything is written
    sizes = network_sizes(config)
    net = network(config)
    weights = net.init_params(np.random.default_rng(config.seed)) if config.model in ("mlp", "cnn") \
        else np.zeros(net.param_count, np.float32)  # linear: zeros, as LambdaML
    store.set_weights(job_id, weights, writers=config.number_of_workers, rule=update_rule(config))
    meta = {
        "job_id": job_id,
        "created_at": store.job_time(),  # on the job's timeline (ParameterStore.job_time)
        "clock": store.job_clock,  # which clock that is
        "sizes": list(sizes),
        "param_count": int(weights.size),
        "train_rows": train_rows,
        "validation_rows": validation_rows,
    }
    store.put_record(job_id, keys.JOB, meta)
    if not store.add_record(job_id, keys.CONFIG, config.to_dict()):
        raise FaasgdError(f"job_id: job {job_id!r} already exists")
    store.append_event(job_id, {"event": "created", "at": meta["created_at"]})
    return job_id


def read_job(store: ParameterStore, job_id: str) -> tuple[TrainConfig, dict[str, Any]]:
    """The job's config and meta records; JobNotFound when it has none (StoreError when the store lost them)."""
    records = store.get_records(job_id, [keys.CONFIG, keys.JOB, keys.LOST])
    if records[keys.LOST] is not None:
        raise StoreError(store.url, records[keys.LOST]["error"])
    if records[keys.CONFIG] is None or records[keys.JOB] is None:
        raise JobNotFound(job_id)
    return config_from_record(records[keys.CONFIG]), records[keys.JOB]


def mark_lost(store: ParameterStore, job_id: str, detail: str) -> str:
    """Record that the store lost this job's state (so it fails with that reason); returns the reason."""
    reason = f"the store lost the job's state ({detail}); the job is not restarted from scratch"
    store.add_record(job_id, keys.LOST, {"error": reason, "at": time.time()})  # not a duration: the local clock
    return reason


PRIVATE = ("rng_state", "epoch_rng_state")  # a worker record's resume state: not shown in status answers


def public(record: dict | None) -> dict | None:
    """A worker's record as status answers show it."""
    return None if record is None else {k: v for k, v in record.items() if k not in PRIVATE}


def read_progress(store: ParameterStore, job_id: str, number_of_workers: int) -> dict[int, dict | None]:
    """Every worker's latest progress record in one round trip (None for a worker not yet started)."""
    names = [keys.progress_name(i) for i in range(number_of_workers)]
    records = store.get_records(job_id, names)
    return {i: records[keys.progress_name(i)] for i in range(number_of_workers)}


def mark_done(store: ParameterStore, job_id: str, crossing: dict[str, Any]) -> bool:
    """Record that the target was reached (`crossing`: see `done` above); True only for the first worker to do so."""
    return store.add_record(job_id, keys.DONE, crossing)


def has_ended(store: ParameterStore, job_id: str) -> bool:
    """Whether a worker reached the target or the job ended otherwise (its result written, its state lost)."""
    records = store.get_records(job_id, [keys.DONE, keys.RESULT, keys.LOST])
    return any(value is not None for value in records.values())


def read_status(store: ParameterStore, job_id: str) -> dict[str, Any]:
    """What anyone wants to know about a job: state, config, per-worker progress, result."""
    records = store.get_records(job_id, [keys.CONFIG, keys.JOB, keys.RESULT, keys.DONE, keys.LOST])  # then progress
    if records[keys.LOST] is not None:
        return lost_status(job_id, records[keys.LOST]["error"])
    if records[keys.CONFIG] is None or records[keys.JOB] is None:
        raise JobNotFound(job_id)
    config, result = config_from_record(records[keys.CONFIG]), records[keys.RESULT]
    workers = range(config.number_of_workers)
    found = store.get_records(job_id, [keys.progress_name(i) for i in workers]
                              + [keys.heartbeat_name(i) for i in workers])
    progress = [found[keys.progress_name(i)] for i in workers]
    return {
        "job_id": job_id,
        "state": result["state"] if result else "running",
        "config": config.to_dict(),
        "created_at": records[keys.JOB]["created_at"],
        "workers": [public(record) for record in progress],
        "done": records[keys.DONE],
        "result": result,
        "waiting": None if result else waiting(progress, [found[keys.heartbeat_name(i)] for i in workers]),
    }


def waiting(progress: list[dict | None], beats: list[dict | None]) -> dict | None:
    """Workers whose call has not started (no record, no heartbeat) while others train: their calls wait for
    a free slot (the runtime runs fewer calls at once than the job has workers) or are still on their way.
    None when no worker waits, or none trains (the fan-out has just happened)."""
    idle = [w for w, (record, beat) in enumerate(zip(progress, beats)) if record is None and beat is None]
    training = sum(1 for record, beat in zip(progress, beats)
                   if beat is not None and (record is None or record.get("state") == "running"))
    if not idle or not training:
        return None
    message = (f"workers {idle} have not started while {training} train: their calls wait for others to end "
               f"(fewer calls run at once than the job has workers), or are still on their way")
    return {"workers": idle, "training": training, "message": message}


def lost_status(job_id: str, error: str) -> dict[str, Any]:
    """The status of a job whose state the store lost: failed, with that reason."""
    from faasgd.result import missing  # the result module builds on this one

    return {"job_id": job_id, "state": "failed", "config": None, "created_at": None, "workers": [], "done": None,
            "result": missing(job_id, error), "waiting": None}

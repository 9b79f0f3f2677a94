"""A training job's records in the store: config, meta, per-worker progress, done flag, result.

Record names (inside the job's key space, see faasgd.store.keys):
  config          the TrainConfig as a dict; written last at creation, so its presence means "job exists"
  job             meta: created_at, layer sizes, parameter count, train/test sizes
  progress:<i>    worker i's latest progress (see sgd.worker.WorkerState.progress)
  done            first worker to reach target_accuracy: {"worker_id", "accuracy", "at"}
  finished        counter of workers that have ended (ok or failed)
  result          the final result record, written once by the last worker to end
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np

from faasgd import data, model
from faasgd.config import TrainConfig, config_from_record
from faasgd.errors import FaasgdError, JobNotFound, StoreError
from faasgd.store import ParameterStore

RESULT_KEYS = (
    "final_accuracy", "time_to_target_s", "epochs", "samples", "samples_per_s", "pushes", "fetches",
    "conflicts", "retries", "staleness_p50", "staleness_p99", "state", "error",
)


def new_job_id() -> str:
    """A fresh job id: short, unique, safe in every store's keys and in URLs."""
    return "j" + uuid.uuid4().hex[:15]


def network_sizes(config: TrainConfig) -> tuple[int, ...]:
    """Layer sizes of the job's network, input and classes taken from its dataset."""
    input_dim, n_classes = data.dataset_info(config.dataset)
    return model.layer_sizes(input_dim, config.hidden_sizes, n_classes)


def create_job(store: ParameterStore, config: TrainConfig, job_id: str | None = None) -> str:
    """Initialise the network (seeded) and write the job's records; returns the job id."""
    job_id = job_id or new_job_id()
    sizes = network_sizes(config)
    weights = model.init_params(sizes, np.random.default_rng(config.seed), config.activation)
    store.set_weights(job_id, weights)
    meta = {
        "job_id": job_id,
        "created_at": time.time(),
        "sizes": list(sizes),
        "param_count": int(weights.size),
    }
    store.put_record(job_id, "job", meta)
    if not store.add_record(job_id, "config", config.to_dict()):
        raise FaasgdError(f"job_id: job {job_id!r} already exists")
    store.append_event(job_id, {"event": "created", "at": meta["created_at"]})
    return job_id


def read_job(store: ParameterStore, job_id: str) -> tuple[TrainConfig, dict[str, Any]]:
    """The job's config and meta records; JobNotFound when it has none."""
    records = store.get_records(job_id, ["config", "job"])
    if records["config"] is None or records["job"] is None:
        raise JobNotFound(job_id)
    return config_from_record(records["config"]), records["job"]


def progress_name(worker_id: int) -> str:
    return f"progress:{worker_id}"


def read_progress(store: ParameterStore, job_id: str, number_of_workers: int) -> dict[int, dict | None]:
    """Every worker's latest progress record in one round trip (None for a worker not yet started)."""
    names = [progress_name(i) for i in range(number_of_workers)]
    records = store.get_records(job_id, names)
    return {i: records[progress_name(i)] for i in range(number_of_workers)}


def mark_done(store: ParameterStore, job_id: str, worker_id: int, accuracy: float) -> bool:
    """Record that the target was reached; True only for the first worker to do so."""
    return store.add_record(job_id, "done", {"worker_id": worker_id, "accuracy": accuracy, "at": time.time()})


def is_done(store: ParameterStore, job_id: str) -> bool:
    return store.get_record(job_id, "done") is not None


def percentile_from_hist(hist: dict[int, int], q: float) -> float | None:
    """The q-th percentile (0..100, nearest rank) of a {value: count} histogram."""
    total = sum(hist.values())
    if total == 0:
        return None
    rank = max(1, int(np.ceil(q / 100.0 * total)))
    seen = 0
    for value in sorted(hist):
        seen += hist[value]
        if seen >= rank:
            return float(value)
    return float(max(hist))


def merge_hists(progress: dict[int, dict | None]) -> dict[int, int]:
    merged: dict[int, int] = {}
    for record in progress.values():
        for lag, count in ((record or {}).get("staleness_hist") or {}).items():
            merged[int(lag)] = merged.get(int(lag), 0) + int(count)
    return merged


def build_result(
    config: TrainConfig,
    meta: dict[str, Any],
    progress: dict[int, dict | None],
    done: dict | None,
    final_accuracy: float | None,
    error: str | None = None,
) -> dict[str, Any]:
    """The job's result record from every worker's final progress."""
    records = [r for r in progress.values() if r]
    errors = [r["error"] for r in records if r.get("error")]
    missing = [i for i, r in progress.items() if not r or r.get("state") not in ("finished", "failed")]
    error = error or (errors[0] if errors else None)
    if error is None and missing:
        error = f"workers {missing} ended without a final record"
    samples = sum(int(r.get("samples", 0)) for r in records)
    started = [r["started_at"] for r in records if r.get("started_at")]
    ended = [r.get("finished_at") or r.get("updated_at") for r in records]
    ended = [t for t in ended if t]
    train_s = (max(ended) - min(started)) if started and ended else None
    hist = merge_hists(progress)
    train_size = sum(int(r.get("shard_size", 0)) for r in records) or None
    return {
        "job_id": meta["job_id"],
        "state": "failed" if error else "done",
        "error": error,
        "final_accuracy": final_accuracy,
        "target_accuracy": config.target_accuracy,
        "reached_target": done is not None,
        "accuracy_at_target": done["accuracy"] if done else None,
        "time_to_target_s": (done["at"] - meta["created_at"]) if done else None,
        "epochs": (samples / train_size) if train_size else 0.0,
        "samples": samples,
        "samples_per_s": (samples / train_s) if train_s else 0.0,
        "wall_s": (max(ended) - meta["created_at"]) if ended else None,
        "pushes": sum(int(r.get("pushes", 0)) for r in records),
        "fetches": sum(int(r.get("fetches", 0)) for r in records),
        "conflicts": sum(int(r.get("conflicts", 0)) for r in records),
        "retries": sum(int(r.get("retries", 0)) for r in records),
        "staleness_p50": percentile_from_hist(hist, 50),
        "staleness_p99": percentile_from_hist(hist, 99),
        "number_of_workers": config.number_of_workers,
        "finished_at": time.time(),
    }


def finish_worker(store: ParameterStore, job_id: str, config: TrainConfig, evaluate) -> dict | None:
    """Count this worker as ended; the last one evaluates the final weights and writes the result.

    `evaluate(weights) -> accuracy` is the caller's test-set evaluation. Returns the result record
    when this call wrote it, else None.
    """
    if store.incr(job_id, "finished") < config.number_of_workers:
        return None
    return write_result(store, job_id, evaluate)


def write_result(store: ParameterStore, job_id: str, evaluate=None, error: str | None = None) -> dict:
    """Assemble and write the result record (once: an existing result is returned unchanged)."""
    existing = store.get_record(job_id, "result")
    if existing is not None:
        return existing
    config, meta = read_job(store, job_id)
    progress = read_progress(store, job_id, config.number_of_workers)
    accuracies = [r["accuracy"] for r in progress.values() if r and r.get("accuracy") is not None]
    final_accuracy = max(accuracies) if accuracies else None  # best seen, when the weights can't be read
    if evaluate is not None:
        try:
            weights, _ = store.authoritative().get_weights(job_id)
            final_accuracy = float(evaluate(weights))
        except StoreError:
            pass
    result = build_result(config, meta, progress, store.get_record(job_id, "done"), final_accuracy, error)
    store.add_record(job_id, "result", result)
    store.append_event(job_id, {"event": "result", "state": result["state"], "at": result["finished_at"]})
    return store.get_record(job_id, "result") or result


def read_status(store: ParameterStore, job_id: str) -> dict[str, Any]:
    """What anyone wants to know about a job: state, config, per-worker progress, result."""
    records = store.get_records(job_id, ["config", "job", "result", "done"])  # one round trip, then progress
    if records["config"] is None or records["job"] is None:
        raise JobNotFound(job_id)
    config, result = config_from_record(records["config"]), records["result"]
    progress = read_progress(store, job_id, config.number_of_workers)
    return {
        "job_id": job_id,
        "state": result["state"] if result else "running",
        "config": config.to_dict(),
        "created_at": records["job"]["created_at"],
        "workers": [progress[i] for i in range(config.number_of_workers)],
        "done": records["done"],
        "result": result,
    }

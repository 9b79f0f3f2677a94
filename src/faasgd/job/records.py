"""A training job's records in the store: create and read the job, its workers' progress, its end.

Record names (inside the job's key space, see faasgd.store.keys):
  config          the TrainConfig as a dict; written last at creation, so its presence means "job exists"
  job             meta: created_at, layer sizes, parameter count, train/test sizes, and the store servers' own
                  CPU-seconds when the job was created (`server_cpu_s`: the result's store_cpu_s counts from it)
  progress:<i>    worker i's record: its progress and checkpoint, written with each of its pushes
                  (faasgd.worker.progress; `pushes` is how many of its pushes the store has applied)
  heartbeat:<i>   worker i is alive (expires lease_s after the last beat; faasgd.functions.supervise);
                  a running job's status lists the workers with neither record yet (`waiting`)
  done            the crossing: the first worker whose validation accuracy reached target_accuracy, with the
                  model it evaluated (faasgd.job.model_file): {"worker_id", "validation_accuracy", "test_accuracy",
                  "at", "samples", "epochs", "version", "model"}; written set-if-absent, after that model
  result          the final result record, written once (faasgd.job.ending, its keys in faasgd.job.result)
  lost            written when the store is found to have lost the job's state (restarted empty,
                  evicted): the job is failed with that reason, never re-initialised
  cancelled       {"at", "by"}: the job was cancelled (cancel_job; written set-if-absent). Workers stop at their next
                  check (has_ended), as at a crossing; the result is then `cancelled`, with what was measured
  restored        a job the store had lost, put back from its model file (restore_job) with its parameters as the
                  copy `restored`, for a job resuming it; no config record: status still finds no such job
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from faasgd.config import TrainConfig, config_from_record
from faasgd.errors import ConfigError, FaasgdError, JobEnded, JobNotFound, StoreError
from faasgd.job.spec import holdout, network, network_sizes, new_job_id, update_rule
from faasgd.store import ParameterStore, keys

log = logging.getLogger("faasgd.job")
WORKER_ENDED_STATES = ("finished", "failed")  # a worker record in one of these states will not change again


def create_job(store: ParameterStore, config: TrainConfig, job_id: str | None = None) -> str:
    """Initialise the network (seeded) and write the job's records; returns the job id."""
    job_id = job_id or new_job_id()
    train_rows, validation_rows = holdout(config)  # refused before anything is written
    server_cpu_s = server_cpu(store)  # before the job's first write: its set-up is the job's too
    store.keep(job_id, config.keep_s)  # every key below expires keep_s after its last write (store/expiry.py)
    sizes = network_sizes(config)
    net = network(config)
    resumed = None
    if config.resume_from:  # refused before anything of this job is written
        weights, resumed = resume_point(store, config, list(sizes), net.param_count)
    else:
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
        "server_cpu_s": server_cpu_s,
        "resumed_from": resumed,
    }
    store.put_record(job_id, keys.JOB, meta)
    if not store.add_record(job_id, keys.CONFIG, config.to_dict()):
        raise FaasgdError(f"job_id: job {job_id!r} already exists")
    store.append_event(job_id, {"event": "created", "at": meta["created_at"]})
    return job_id


def resume_point(store: ParameterStore, config: TrainConfig, sizes: list[int],
                 param_count: int) -> tuple[np.ndarray, dict[str, Any]]:
    """Where a job resuming `config.resume_from` starts: that job's last parameters in this store, and what it had
    done by its end, its own resumptions included (`samples`, `epochs`, `wall_s`: its result's, summed down the
    chain), which the new job's result counts on from (faasgd.job.ending). Not carried: adagrad's accumulated
    squares (the rule starts them at zero again) and each worker's place in its epoch (the new job's workers start
    a pass of their own). ConfigError naming resume_from: no such job in this store, still running, or another
    network."""
    old_id = config.resume_from
    found = store.get_records(old_id, [keys.CONFIG, keys.JOB, keys.RESULT, keys.LOST, keys.RESTORED])
    if found[keys.CONFIG] is None and found[keys.RESTORED] is not None:  # put back from its model file
        return restored_point(store, old_id, found[keys.RESTORED], sizes, param_count)
    if found[keys.CONFIG] is None or found[keys.JOB] is None or found[keys.LOST] is not None:
        raise ConfigError("resume_from", f"no job {old_id!r} with parameters in this store (kept keep_s after a job's "
                                         f"last write; the store may have lost them)")
    if found[keys.RESULT] is None:
        raise ConfigError("resume_from", f"job {old_id!r} is still running: cancel it first (faasgd cancel {old_id})")
    meta, old = found[keys.JOB], found[keys.RESULT]
    if meta.get("sizes") != sizes or meta.get("param_count") != param_count:
        raise ConfigError("resume_from", f"job {old_id!r} trains another network (layers {meta.get('sizes')}, "
                                         f"{meta.get('param_count')} parameters; this job's {sizes}, {param_count})")
    weights, _ = store.get_weights(old_id)
    return weights[:param_count].astype(np.float32, copy=False), {"job_id": old_id, **trained_by(meta, old)}


def restore_job(store: ParameterStore, job_id: str, params: np.ndarray, sizes: list[int],
                trained: dict[str, Any], keep_s: int) -> dict[str, Any]:
    """Put a model file's parameters back under its job's id (a store that lost the job: restarted empty,
    flushed, expired), so a job with `resume_from` that id starts from them (resume_point) and counts on from
    `trained`. The copy first, then the `restored` record set-if-absent (the commit). Refused, nothing written,
    when the job is still in this store (ConfigError job_id: resume it from there). Restored already: that first
    restore's record is answered (`"again": True`), nothing is written, and a second resume starts from the same
    parameters as the first."""
    found = store.get_records(job_id, [keys.CONFIG, keys.RESTORED])
    if found[keys.CONFIG] is not None:
        raise ConfigError("job_id", f"job {job_id!r} is in this store: resume it from there, without its model file")
    if found[keys.RESTORED] is not None:
        return {**found[keys.RESTORED], "again": True}
    store.keep(job_id, keep_s)
    store.keep_copy(job_id, keys.RESTORED_COPY, params)
    record = {"sizes": [int(s) for s in sizes], "param_count": int(params.size), "trained": trained,
              "at": store.job_time()}
    if not store.add_record(job_id, keys.RESTORED, record):  # another restore came first: its copy is this one's
        return {**store.get_record(job_id, keys.RESTORED), "again": True}
    return record


def restored_point(store: ParameterStore, old_id: str, restored: dict, sizes: list[int],
                   param_count: int) -> tuple[np.ndarray, dict[str, Any]]:
    """resume_point's answer for a job put back from its model file (restore_job)."""
    if restored.get("sizes") != sizes or restored.get("param_count") != param_count:
        raise ConfigError("resume_from", f"job {old_id!r}'s model file holds another network (layers "
                                         f"{restored.get('sizes')}, {restored.get('param_count')} parameters; this "
                                         f"job's {sizes}, {param_count})")
    weights = store.read_copy(old_id, keys.RESTORED_COPY)
    if weights is None:
        raise ConfigError("resume_from", f"job {old_id!r}'s restored parameters are gone from this store (expired "
                                         f"or evicted): restore its model file again")
    return weights, {"job_id": old_id, "restored": True, **restored["trained"]}


def trained_by(meta: dict, end: dict) -> dict[str, Any]:
    """{samples, epochs, wall_s} a job had trained by `end` (its result, or its crossing while it still runs),
    its own resumptions' included (meta's resumed_from): what a job resuming it counts on from."""
    before = meta.get("resumed_from") or {}
    counted = {key: float(before.get(key) or 0) + float(end.get(key) or 0) for key in ("samples", "epochs", "wall_s")}
    return {**counted, "samples": int(counted["samples"])}


def server_cpu(store: ParameterStore) -> float | None:
    """The store servers' CPU-seconds now, by their own count (ParameterStore.server_cpu_s); None when they do not
    say, or a server does not answer: a job's figure is then unknown, never a reason to fail the job."""
    try:
        return store.server_cpu_s()
    except StoreError as error:
        log.warning("the store servers' CPU count is unknown: %s", error)
        return None


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


def read_progress(store: ParameterStore, job_id: str, number_of_workers: int, *,
                  resources: bool = False) -> dict[int, dict | None]:
    """Every worker's latest progress record in one round trip (None for a worker not yet started); with
    `resources`, each record holding its worker's resource stats (`resources:<i>`, {} when none) as `resources`."""
    workers = range(number_of_workers)
    names = [keys.progress_name(i) for i in workers] + [keys.resources_name(i) for i in workers if resources]
    records = store.get_records(job_id, names)
    progress = {i: records[keys.progress_name(i)] for i in workers}
    return with_resources(progress, records) if resources else progress


def with_resources(progress: dict[int, dict | None], found: dict[str, dict | None]) -> dict[int, dict | None]:
    """`progress` (worker -> record) with each record's resource stats from `found` (its `resources:<i>` read)."""
    for i, record in progress.items():
        if record is not None:
            record["resources"] = found.get(keys.resources_name(i)) or {}
    return progress


def mark_done(store: ParameterStore, job_id: str, crossing: dict[str, Any]) -> bool:
    """Record that the target was reached (`crossing`: see `done` above); True only for the first worker to do so."""
    return store.add_record(job_id, keys.DONE, crossing)


def has_ended(store: ParameterStore, job_id: str) -> bool:
    """Whether a worker reached the target or the job ended otherwise (its result written, its state lost, it was
    cancelled)."""
    records = store.get_records(job_id, [keys.DONE, keys.RESULT, keys.LOST, keys.CANCELLED])
    return any(value is not None for value in records.values())


def cancel_job(store: ParameterStore, job_id: str, by: str = "") -> dict[str, Any]:
    """Cancel a running job: its workers stop at their next check of has_ended (every ENDED_CHECK_EVERY_S between
    steps, and before a call's first step), no call hands off or starts training after it, and the last worker to
    end writes the result `cancelled` (what was measured kept, the last parameters kept as the job's model). Once is
    enough: a second request returns the first's record. `by` says who asked (e.g. "cli", "http").
    JobNotFound for no such job; JobEnded (naming its state) for a job that has ended, nothing written then."""
    records = store.get_records(job_id, [keys.CONFIG, keys.RESULT, keys.LOST, keys.CANCELLED])
    if records[keys.LOST] is not None:
        raise JobEnded(job_id, "failed")
    if records[keys.CONFIG] is None:
        raise JobNotFound(job_id)
    if records[keys.RESULT] is not None:
        raise JobEnded(job_id, records[keys.RESULT].get("state", "ended"))
    if records[keys.CANCELLED] is not None:
        return records[keys.CANCELLED]
    record = {"at": store.job_time(), "by": str(by)[:64]}
    store.add_record(job_id, keys.CANCELLED, record)
    store.append_event(job_id, {"event": "cancelled", "at": record["at"], "by": record["by"]})
    return store.get_record(job_id, keys.CANCELLED) or record



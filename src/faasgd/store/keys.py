"""Every store key and every record, counter, copy and blob name is built here; none is ever parsed back apart.

Keys, prefixed `faasgd:{job_id}:` (one letter per namespace, so names of different kinds never collide):
    w:meta        weight layout (JSON: length, chunk_floats, writers, update rule)
    w:version     pushes applied since set_weights (decimal ASCII counter)
    w:{i}         weight chunk i (raw little-endian float32; adagrad: the weights, then their G)
    r:{name}      JSON record
    c:{name}      counter (decimal ASCII)
    events        event log (Redis list) or event count (Memcached counter)
    e:{i}         event i (Memcached, memory)
    p:{w}:meta    Memcached: worker w's push under way (its number and record), for rolling it forward
    p:{w}:{i}     Memcached: chunk i of that push's delta
    m:{name}:meta a kept copy of parameters (the job's model, faasgd.job.model_file): JSON length and chunks
    m:{name}:{i}  chunk i of that copy (raw little-endian float32, below the item limit)
    b:{name}:meta a blob (opaque bytes, store/blobs.py): JSON length, chunks, sha256
    b:{name}:{i}  chunk i of that blob
Job ids may not contain ':' (that would make one job's prefix another's key); record names may.
All keys stay below memcached's 250-byte limit: 7 + 64 + 1 + 2 + 128 < 250.
Every key above expires: `keep_s` (the job's config, 7 days by default, 1 s to 30 days) after its last write,
each write refreshing it, and the keys a job reads throughout renewed while the job is written to; leases,
heartbeats and claims keep their own shorter expiry, capped at keep_s. How each backend writes it, what is
renewed, and where a store learns a job's keep_s: store/expiry.py.

Names inside the job's key space (the `{name}` above), each built by a constant or function below:
    records   config, job, done, result, lost, cancelled (faasgd.job.records, faasgd.job.ending); state (a stacking
              job);
              progress:{w} (worker w's progress and checkpoint, written with each push); heartbeat:{w};
              lease:{w}:{scope}; supervising:{w}, relaunch:{w}, undelivered:{w} (functions/supervise.py); profile:{w};
              resources:{w} (worker w's resource stats, faasgd.worker.progress);
              cache-refresh:{bucket} (store/node_local.py, in the node's cache)
    counters  conflicts
    copies    crossing-{w} (a worker's candidate model), final (the model of a job ended below its target)
    blobs     residual:{w}:{seq}:{owner hash} (downpour/residual.py); sync-state:{w}:{slot} (lambdaml/sync_checkpoint.py);
              {tag}:r{round}:p{slice}of{slices}:w{writer} and {tag}:r{round}:m{slice}of{slices} (lambdaml/rounds/wire.py);
              a stacking job's objects: dataset, model:{i}, pred:{i}, models, meta-features, full-model
Callers import these; no other module formats a key or a name (tests/unit/store/test_store_names.py scans src for it).
"""

from __future__ import annotations

import hashlib
import re

from faasgd.errors import ConfigError

PREFIX = "faasgd"
MAX_JOB_ID = 64
MAX_NAME = 128
_JOB_ID = re.compile(r"[A-Za-z0-9_.-]{1,%d}\Z" % MAX_JOB_ID)
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,%d}\Z" % MAX_NAME)


def check_job_id(job_id: str) -> str:
    """Return `job_id` if it is 1-64 characters of [A-Za-z0-9_.-], else raise ConfigError('job_id')."""
    if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
        raise ConfigError(
            "job_id", f"must be 1-{MAX_JOB_ID} characters of [A-Za-z0-9_.-], got {job_id!r}"
        )
    return job_id


def check_name(name: str) -> str:
    """Return a record/counter name if it is 1-128 characters of [A-Za-z0-9_.:-], else ConfigError('name')."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError("name", f"must be 1-{MAX_NAME} characters of [A-Za-z0-9_.:-], got {name!r}")
    return name


def job_prefix(job_id: str) -> str:
    return f"{PREFIX}:{check_job_id(job_id)}:"


def weights_meta(job_id: str) -> str:
    return job_prefix(job_id) + "w:meta"


def weights_version(job_id: str) -> str:
    return job_prefix(job_id) + "w:version"


def weights_chunk(job_id: str, index: int) -> str:
    return job_prefix(job_id) + f"w:{index}"


def weights_chunks(job_id: str, count: int) -> list[str]:
    prefix = job_prefix(job_id)
    return [f"{prefix}w:{i}" for i in range(count)]


def record(job_id: str, name: str) -> str:
    return job_prefix(job_id) + "r:" + check_name(name)


def counter(job_id: str, name: str) -> str:
    return job_prefix(job_id) + "c:" + check_name(name)


def events(job_id: str) -> str:
    return job_prefix(job_id) + "events"


def event(job_id: str, index: int) -> str:
    return job_prefix(job_id) + f"e:{index}"


def worker(job_id: str, worker_id: int) -> str:
    """Worker `worker_id`'s record (its progress and checkpoint; see store/push.py)."""
    return record(job_id, progress_name(worker_id))


def pending(job_id: str, worker_id: int) -> str:
    return job_prefix(job_id) + f"p:{int(worker_id)}:meta"


def pending_chunks(job_id: str, worker_id: int, count: int) -> list[str]:
    prefix = job_prefix(job_id)
    return [f"{prefix}p:{int(worker_id)}:{i}" for i in range(count)]


def model_meta(job_id: str, name: str) -> str:
    return job_prefix(job_id) + f"m:{check_name(name)}:meta"


def model_chunks(job_id: str, name: str, count: int) -> list[str]:
    prefix = job_prefix(job_id) + f"m:{check_name(name)}:"
    return [f"{prefix}{i}" for i in range(count)]


def blob_meta(job_id: str, name: str) -> str:
    return job_prefix(job_id) + f"b:{check_name(name)}:meta"


def blob_chunks(job_id: str, name: str, count: int) -> list[str]:
    prefix = job_prefix(job_id) + f"b:{check_name(name)}:"
    return [f"{prefix}{i}" for i in range(count)]


# ---- record names (r:) -------------------------------------------------------------------------------------
CONFIG = "config"  # the job's config as a dict (TrainConfig or StackingConfig); its presence means the job exists
JOB = "job"  # a training job's meta: created_at, layer sizes, parameter count, rows (faasgd.job.records)
DONE = "done"  # the target's crossing: the first worker to reach it and the copy it kept (faasgd.job.model_file)
RESULT = "result"  # the final result, written once (faasgd.job.ending)
LOST = "lost"  # the store lost the job's state: the reason the job failed
CANCELLED = "cancelled"  # someone cancelled the job: when, and whose request (faasgd.job.records.cancel_job)
STATE = "state"  # a stacking job's state and phase (faasgd.stacking.records)
RESTORED = "restored"  # a model file's parameters put back under its job's id (faasgd.job.records.restore_job)


def progress_name(worker_id: int) -> str:
    """Worker `worker_id`'s record: its progress and checkpoint, written with each of its pushes."""
    return f"progress:{int(worker_id)}"


def heartbeat_name(worker_id: int) -> str:
    """Worker `worker_id` is alive: the record expires lease_s after its last beat (worker/liveness.py)."""
    return f"heartbeat:{int(worker_id)}"


def lease_name(worker_id: int, scope: int | str) -> str:
    """The record holding worker `worker_id`'s lease for `scope` ("loop" or an iteration; worker/lease.py)."""
    return f"lease:{int(worker_id)}:{scope}"


def supervising_name(worker_id: int) -> str:
    """A supervisor's claim on re-invoking worker `worker_id` (functions/supervise.py)."""
    return f"supervising:{int(worker_id)}"


def relaunch_name(worker_id: int) -> str:
    """How often worker `worker_id` was re-invoked without progress (functions/supervise.py)."""
    return f"relaunch:{int(worker_id)}"


def undelivered_name(worker_id: int) -> str:
    """The queue's report that worker `worker_id`'s call ended unanswered (functions/supervise.py)."""
    return f"undelivered:{int(worker_id)}"


def profile_name(worker_id: int) -> str:
    """Worker `worker_id`'s profile series (faasgd.profile)."""
    return f"profile:{int(worker_id)}"


def resources_name(worker_id: int) -> str:
    """Worker `worker_id`'s resource stats (faasgd.profile.bursts.resources_record), apart from its record."""
    return f"resources:{int(worker_id)}"


def cache_refresh_name(bucket: int) -> str:
    """The node cache's claim on refreshing its weights in interval `bucket` (store/node_local.py)."""
    return f"cache-refresh:{int(bucket)}"


# ---- counter names (c:) and copy names (m:) ------------------------------------------------------------------
CONFLICTS = "conflicts"  # the conflicts the store's pushes lost
LAST_PARAMS_COPY = "final"  # the last parameters of a job that ended below its target, kept as its model
                            # (faasgd.job.model_file)
RESTORED_COPY = "restored"  # a model file's parameters, for a job resuming from them (faasgd.job.records)


def crossing_copy(worker_id: int) -> str:
    """Worker `worker_id`'s candidate model, kept at its crossing (faasgd.job.model_file)."""
    return f"crossing-{int(worker_id)}"


# ---- blob names (b:, or objects of a blob space) --------------------------------------------------------------
def residual_name(worker_id: int, seq: int, owner: str) -> str:
    """Worker `worker_id`'s residual right after its push `seq`, kept by invocation `owner` (downpour/residual.py)."""
    return f"residual:{int(worker_id)}:{int(seq)}:{hashlib.sha256(owner.encode()).hexdigest()[:16]}"


def sync_state_name(worker_id: int, rounds: int) -> str:
    """Worker `worker_id`'s state after `rounds` rounds, in one of two slots (lambdaml/sync_checkpoint.py)."""
    return f"sync-state:{int(worker_id)}:{rounds % 2}"


def round_part_name(tag: str, round_no: int, slice_index: int, slices: int, writer: int) -> str:
    """Worker `writer`'s contribution to one slice of round `round_no` (lambdaml/rounds/wire.py)."""
    return f"{tag}:r{round_no}:p{slice_index}of{slices}:w{writer}"


def round_merged_name(tag: str, round_no: int, slice_index: int, slices: int) -> str:
    """The merged slice of round `round_no`, written by that slice's merger (lambdaml/rounds/wire.py)."""
    return f"{tag}:r{round_no}:m{slice_index}of{slices}"


def round_members_name(tag: str, round_no: int) -> str:
    """The workers whose contributions round `round_no` merged, with backup workers (lambdaml/rounds/exchange.py)."""
    return f"{tag}:r{round_no}:members"


# a stacking job's objects (faasgd.stacking.transfer: blobs of the job's store, objects of its S3 space, or inline)
DATASET_OBJECT = "dataset"
MODELS_OBJECT = "models"  # the trainers' base models, one file
META_FEATURES_OBJECT = "meta-features"
FULL_MODEL_OBJECT = "full-model"  # the base models and the meta-model


def trainer_model_name(trainer_id: int) -> str:
    """Trainer `trainer_id`'s fitted base model."""
    return f"model:{trainer_id}"


def trainer_predictions_name(trainer_id: int) -> str:
    """Trainer `trainer_id`'s out-of-fold and test predictions."""
    return f"pred:{trainer_id}"

"""Every store key is built here, prefixed `faasgd:{job_id}:`; keys are never parsed back apart.

Layout under the prefix (one letter per namespace, so names of different kinds never collide):
    w:meta        weight layout (JSON: length, chunk_floats, writers, update rule)
    w:version     pushes applied since set_weights (decimal ASCII counter)
    w:{i}         weight chunk i (raw little-endian float32; adagrad: the weights, then their G)
    r:{name}      JSON record
    c:{name}      counter (decimal ASCII)
    events        event log (Redis list) or event count (Memcached counter)
    e:{i}         event i (Memcached, memory)
    r:progress:{w} worker w's record: progress and checkpoint, `pushes` applied (written with each push)
    p:{w}:meta    Memcached: worker w's push under way (its number and record), for rolling it forward
    p:{w}:{i}     Memcached: chunk i of that push's delta
    m:{name}:meta a kept copy of parameters (the job's model, faasgd.job_model): JSON length and chunks
    m:{name}:{i}  chunk i of that copy (raw little-endian float32, below the item limit)
    b:{name}:meta a blob (opaque bytes, store/blobs.py): JSON length, chunks, sha256
    b:{name}:{i}  chunk i of that blob
Job ids may not contain ':' (that would make one job's prefix another's key); record names may.
All keys stay below memcached's 250-byte limit: 7 + 64 + 1 + 2 + 128 < 250.
"""

from __future__ import annotations

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
    return record(job_id, f"progress:{int(worker_id)}")


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

"""A stacking job's records in the store (inside the job's key space, faasgd.store.keys):

    config   the StackingConfig as a dict; created set-if-absent, so its presence means "the job exists"
    state    {"state": running | done | failed, "phase", "created_at", ...}; the result's keys when done
             (base_scores, ensemble_score, phases, total_s), the error when failed
Objects (transfer store) are blobs beside them: dataset, model:<i>, pred:<i>, models, meta-features,
full-model (store/blobs.py).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from faasgd.errors import FaasgdError, JobNotFound
from faasgd.stacking.config import StackingConfig, config_from_record
from faasgd.store import ParameterStore

FINAL = ("done", "failed")


def new_job_id() -> str:
    return "s" + uuid.uuid4().hex[:15]


def create_job(store: ParameterStore, config: StackingConfig) -> str:
    job_id = new_job_id()
    if not store.add_record(job_id, "config", config.to_dict()):
        raise FaasgdError(f"job_id: job {job_id!r} already exists")
    store.put_record(job_id, "state", {"state": "running", "phase": "created", "created_at": time.time()})
    return job_id


def read_config(store: ParameterStore, job_id: str) -> StackingConfig:
    record = store.get_record(job_id, "config")
    if record is None:
        raise JobNotFound(job_id)
    return config_from_record(record)


def set_state(store: ParameterStore, job_id: str, **fields: Any) -> dict:
    state = {**(store.get_record(job_id, "state") or {}), **fields}
    store.put_record(job_id, "state", state)
    return state


def read_status(store: ParameterStore, job_id: str) -> dict:
    records = store.get_records(job_id, ["config", "state"])
    if records["config"] is None:
        raise JobNotFound(job_id)
    return {"job_id": job_id, **(records["state"] or {"state": "running"}), "config": records["config"]}

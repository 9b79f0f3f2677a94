"""A stacking job's records in the store (inside the job's key space, faasgd.store.keys):

    config   the StackingConfig as a dict; created set-if-absent, so its presence means "the job exists"
    state    {"state": running | done | failed, "phase", "created_at", "deadline_at", ...}; the result's keys
             when done (base_scores, ensemble_score, phases, total_s), the error when failed

Jobs that always end: the job gets a deadline when it is created (the store server's clock, as every
time here), long enough for every phase's calls with their retries (`deadline_s`). A job still
running past it (its driver was killed, its replica lost) is failed by the next status read, with the
reason; a driver that finishes afterwards does not overwrite that (`finish`), so a job ends once
(`finish` reads, then writes: a deadline failure landing in that one round trip would be overwritten).
Objects (transfer store) are blobs beside them: dataset, model:<i>, pred:<i>, models, meta-features,
full-model (store/blobs.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from faasgd.errors import FaasgdError, JobNotFound
from faasgd.stacking.config import StackingConfig, config_from_record
from faasgd.stacking.record_store import RecordStore
from faasgd.store import keys

JOB_ENDED_STATES = ("done", "failed")  # a stacking job in one of these states has ended: its state stays
CALL_ATTEMPTS = 3  # tries of one call of a trainer, the reducer or the metatrainer (flow.py retries)
UPLOAD_S = 60.0  # the driver's own work before the first call (making and putting the dataset)


def new_job_id() -> str:
    return "s" + uuid.uuid4().hex[:15]


def deadline_s(config: StackingConfig) -> float:
    """How long a job may run: every phase's calls (trainers one after another, or at once), each retried."""
    calls = (config.trainers_num if not config.concurrent_training else 1) + 2  # + reducer + metatrainer
    return UPLOAD_S + calls * CALL_ATTEMPTS * config.call_timeout_s


def create_job(store: RecordStore, config: StackingConfig) -> str:
    job_id = new_job_id()
    if not store.add_record(job_id, keys.CONFIG, config.to_dict()):
        raise FaasgdError(f"job_id: job {job_id!r} already exists")
    now = store.server_time()
    store.put_record(job_id, keys.STATE, {"state": "running", "phase": "created", "created_at": now,
                                          "deadline_at": now + deadline_s(config)})
    return job_id


def read_config(store: RecordStore, job_id: str) -> StackingConfig:
    record = store.get_record(job_id, keys.CONFIG)
    if record is None:
        raise JobNotFound(job_id)
    return config_from_record(record)


def set_state(store: RecordStore, job_id: str, **fields: Any) -> dict:
    state = {**(store.get_record(job_id, keys.STATE) or {}), **fields}
    store.put_record(job_id, keys.STATE, state)
    return state


def finish(store: RecordStore, job_id: str, **fields: Any) -> dict:
    """The driver's last write (done or failed), unless the job has already ended (past its deadline)."""
    state = store.get_record(job_id, keys.STATE) or {}
    if state.get("state") in JOB_ENDED_STATES:
        return state
    return set_state(store, job_id, **fields)


def read_status(store: RecordStore, job_id: str) -> dict:
    """The job's state and config; a job running past its deadline is failed here, with the reason."""
    records = store.get_records(job_id, [keys.CONFIG, keys.STATE])
    if records[keys.CONFIG] is None:
        raise JobNotFound(job_id)
    state = records[keys.STATE] or {"state": "running"}
    deadline = state.get("deadline_at")
    if state.get("state") == "running" and isinstance(deadline, (int, float)) and store.server_time() > deadline:
        state = set_state(store, job_id, state="failed", error=(
            f"the job did not end by its deadline ({deadline - state.get('created_at', deadline):.0f} s after it "
            f"was created, in phase {state.get('phase')!r}): its driver was stopped or lost"))
    return {"job_id": job_id, **state, "config": records[keys.CONFIG]}

"""A job's status: what anyone wants to know about it in one answer (state, config, workers, crossing, result).

Read from its records (faasgd.job.records); a job whose state the store lost answers failed, with a
result that says so (faasgd.job.result.missing).
"""

from __future__ import annotations

from typing import Any

from faasgd.config import config_from_record
from faasgd.errors import JobNotFound
from faasgd.job.result import missing
from faasgd.store import ParameterStore, keys

PRIVATE = ("rng_state", "epoch_rng_state")  # a worker record's resume state: not shown in status answers


def public(record: dict | None) -> dict | None:
    """A worker's record as status answers show it."""
    return None if record is None else {k: v for k, v in record.items() if k not in PRIVATE}


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
    return {"job_id": job_id, "state": "failed", "config": None, "created_at": None, "workers": [], "done": None,
            "result": missing(job_id, error), "waiting": None}

"""A job's status: what anyone wants to know about it in one answer (state, config, workers, crossing, result).

Read from its records (faasgd.job.records); a job whose state the store lost answers failed, with a
result that says so (faasgd.job.result.missing).
"""

from __future__ import annotations

from typing import Any, Callable

from faasgd.config import config_from_record
from faasgd.errors import JobNotFound
from faasgd.job.records import with_resources
from faasgd.job.result import missing
from faasgd.polling import poll_until
from faasgd.store import ParameterStore, keys

PRIVATE = ("rng_state", "epoch_rng_state")  # a worker record's resume state: not shown in status answers
# How often wait_for_end looks for the job's end: a read of two small records (~0.2 ms of the store's and the
# reader's CPU), so a watcher learns of the end within 20 ms at ~1% of a core, where a status read through the
# gateway costs ~19 ms of CPU (cli/train.py)
END_POLL_S = 0.02
# The longest wait a status read may ask (emnist-setup's `wait`): well inside the gateway's and the watchdog's
# timeouts (stack.yml), and one of a replica's 4 waitress threads (the template's) held no longer than this
MAX_WAIT_S = 10.0


def public(record: dict | None) -> dict | None:
    """A worker's record as status answers show it."""
    return None if record is None else {k: v for k, v in record.items() if k not in PRIVATE}


def read_status(store: ParameterStore, job_id: str) -> dict[str, Any]:
    """What anyone wants to know about a job: state, config, per-worker progress, result."""
    records = store.get_records(job_id, [keys.CONFIG, keys.JOB, keys.RESULT, keys.DONE, keys.LOST,
                                         keys.CANCELLED])  # then progress
    if records[keys.LOST] is not None:
        return lost_status(job_id, records[keys.LOST]["error"])
    if records[keys.CONFIG] is None or records[keys.JOB] is None:
        raise JobNotFound(job_id)
    config, result = config_from_record(records[keys.CONFIG]), records[keys.RESULT]
    workers = range(config.number_of_workers)
    found = store.get_records(job_id, [keys.progress_name(i) for i in workers]
                              + [keys.heartbeat_name(i) for i in workers] + [keys.resources_name(i) for i in workers])
    progress = list(with_resources({i: found[keys.progress_name(i)] for i in workers}, found).values())
    return {
        "job_id": job_id,
        "state": result["state"] if result else "running",
        "config": config.to_dict(),
        "created_at": records[keys.JOB]["created_at"],
        "workers": [public(record) for record in progress],
        "done": records[keys.DONE],
        "cancelled": records[keys.CANCELLED],  # {"at", "by"} once cancelled: running until its workers have stopped
        "result": result,
        "waiting": None if result else waiting(progress, [found[keys.heartbeat_name(i)] for i in workers]),
    }


def wait_for_end(store: ParameterStore, job_id: str, seconds: float, *, every_s: float = END_POLL_S,
                 **clock: Callable) -> bool:
    """Until the job is no longer running (its result record is written, or its state was lost) or `seconds` have
    passed: True if it has ended. emnist-setup's `wait` (a status answered as the job ends, not at the next poll).
    `clock`: poll_until's sleep and clock."""
    def ended(found: dict) -> bool:
        return any(value is not None for value in found.values())

    return ended(poll_until(lambda: store.get_records(job_id, [keys.RESULT, keys.LOST]), ended, seconds,
                            poll_s=every_s, **clock))


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
            "cancelled": None, "result": missing(job_id, error), "waiting": None}

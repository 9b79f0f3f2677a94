"""A training job: what its config makes of it, its records in the store, its status, result and trained model.

    spec        its id, network, update rule and held-out rows: pure functions of its TrainConfig
    records     create and read the job, its workers' progress records, the crossing (`done`), a lost state, a
                cancel
    result      the result record: its keys (RESULT_KEYS, MEASURES) and the one builder; no store
    status      what a status answer shows: state, config, workers, crossing, result
    model_file  the trained model: kept at the crossing (or the last parameters), read back, as an npz
                file, evaluated
    ending      who writes the result record, once: the last worker to end, or whoever fails the job

Imports run one way, down this list's dependencies and never back up:
spec <- records <- result <- status; records <- model_file <- ending -> result.
This face hands on the names most callers use (`job.create_job`, `job.network`, `job.read_status`);
result, model_file and ending are imported by name.
"""

from faasgd.job.records import (WORKER_ENDED_STATES, cancel_job, create_job, has_ended, mark_done, mark_lost,
                                read_job, read_progress, restore_job)
from faasgd.job.spec import holdout, network, network_sizes, new_job_id, update_rule
from faasgd.job.status import read_status, wait_for_end, waiting

__all__ = ["WORKER_ENDED_STATES", "cancel_job", "create_job", "has_ended", "mark_done", "mark_lost", "read_job", "read_progress",
           "restore_job",
           "holdout", "network", "network_sizes", "new_job_id", "update_rule", "read_status", "wait_for_end", "waiting"]

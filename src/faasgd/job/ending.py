"""Who writes a job's result record, and when: once, by the last worker to end, or by whoever fails the job.

The last worker to end writes the result (`finish_worker`); when no worker can (they died, the
fan-out failed) the orchestration or the supervisor writes a failed one (`write_result` with an
error). Below its target, the final global parameters are kept as the job's model first
(faasgd.job.model_file.keep_last_params). The record itself is built by faasgd.job.result.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from faasgd.config import TrainConfig
from faasgd.errors import StoreError
from faasgd.job import model_file
from faasgd.job.records import WORKER_ENDED_STATES, read_job, read_progress, server_cpu
from faasgd.job.result import Outcome, build_result
from faasgd.store import ParameterStore, keys


def finish_worker(store: ParameterStore, job_id: str, config: TrainConfig,
                  evaluate: Callable[[np.ndarray], tuple[float, float]] | None,
                  shares: Sequence[float] = ()) -> dict | None:
    """After a worker's final record: when every worker's record is final, write the result (once).

    The worker records decide, not a counter of calls, so a call that ends twice (a redelivery) or a
    crash between the final record and this check changes nothing: the next worker or supervisor to
    look writes it. `evaluate(weights) -> (validation, test accuracy)` evaluates the final weights of
    a job that did not reach its target, kept as its model; `shares` each class's share of the test rows
    (job.result.class_shares: the result says when the model scores what always guessing one does). The result,
    or None.
    """
    progress = read_progress(store, job_id, config.number_of_workers)
    if not all(r and r.get("state") in WORKER_ENDED_STATES for r in progress.values()):
        return None
    return write_result(store, job_id, evaluate, shares=shares)


def write_result(store: ParameterStore, job_id: str,
                 evaluate: Callable[[np.ndarray], tuple[float, float]] | None = None, error: str | None = None,
                 shares: Sequence[float] = ()) -> dict:
    """Assemble and write the result record once (an existing result is returned unchanged).

    Below the target, with `evaluate`, the final global parameters are kept as the job's model first."""
    existing = store.get_record(job_id, keys.RESULT)
    if existing is not None:
        return existing
    config, meta = read_job(store, job_id)
    progress = read_progress(store, job_id, config.number_of_workers, resources=True)
    ended = store.get_records(job_id, [keys.DONE, keys.CANCELLED])  # one round trip: the crossing, a cancel
    done, cancelled, final = ended[keys.DONE], ended[keys.CANCELLED], None
    if done is None and evaluate is not None and error is None:
        try:
            weights, version = model_file.keep_last_params(store, job_id)
            validation, test = evaluate(weights)
            final = {"validation": float(validation), "test": float(test), "version": version}
        except StoreError:
            pass
    calls = [e for e in store.events(job_id) if e.get("event") == "call"]  # no worker record holds these
    result = build_result(config, meta, progress, done, Outcome(final, error, store.job_time(), calls, server_cpu(store),
                                                                shares))
    count_on(result, meta.get("resumed_from"))
    if cancelled is not None and result["state"] == "done" and done is None:  # a failure, or the target, says more
        result["state"] = "cancelled"  # when, and by whom: the status's `cancelled` and the event log
    store.add_record(job_id, keys.RESULT, result)
    store.append_event(job_id, {"event": "result", "state": result["state"], "at": result["finished_at"]})
    return store.get_record(job_id, keys.RESULT) or result


def count_on(result: dict, before: dict | None) -> None:
    """A resumed job's result names the job it resumed and counts its figures to the target on from that job's
    (faasgd.job.records.resume_point): samples, epochs and seconds to the target are the whole chain's; the totals
    (samples, epochs, wall_s) and the costs stay this job's own."""
    if not before:
        return
    result["resumed_from"] = before["job_id"]
    for key, base in (("samples_to_target", "samples"), ("epochs_to_target", "epochs"), ("time_to_target_s", "wall_s")):
        if result.get(key) is not None:
            total = result[key] + before[base]
            result[key] = int(total) if key == "samples_to_target" else float(total)

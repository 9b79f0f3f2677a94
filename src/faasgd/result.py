"""A job's result record: the one list of its keys, the one builder, and who writes it.

The last worker to end writes the result (`finish_worker`); when no worker can (they died, the
fan-out failed) the orchestration writes a failed one (`write_result` with an error); a client that
cannot read any record (store gone, timeout) reports `missing(...)`. All three have RESULT_KEYS.
The CLI, test.sh's CSV and tables, and the tests take their columns from here.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from faasgd import job
from faasgd.config import TrainConfig
from faasgd.errors import StoreError
from faasgd.store import ParameterStore

FINAL = ("finished", "failed")  # a worker record in one of these states will not change again
# What a run measured, in the order test.sh's CSV and tables show it.
MEASURES: tuple[str, ...] = (
    "time_to_target_s", "reached_target", "epochs", "final_accuracy", "accuracy_at_target", "samples",
    "samples_per_s", "pushes", "fetches", "conflicts", "retries", "staleness_p50", "staleness_p99", "wall_s",
    "max_concurrent_workers",  # the most workers that trained at the same time (intervals_peak)
)
# Every key of a result record.
RESULT_KEYS: tuple[str, ...] = (
    ("job_id", "state", "error") + MEASURES + ("target_accuracy", "number_of_workers", "finished_at")
)


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
    """The workers' staleness histograms added together."""
    merged: dict[int, int] = {}
    for record in progress.values():
        for lag, count in ((record or {}).get("staleness_hist") or {}).items():
            merged[int(lag)] = merged.get(int(lag), 0) + int(count)
    return merged


def intervals_peak(progress: dict[int, dict | None]) -> int:
    """The largest number of workers training at the same time: a sweep over every call's [start, end]
    (the workers' `intervals`). Intervals that touch do not overlap; a worker counts once however many
    of its calls overlap (a duplicate delivery)."""
    events = sorted((float(t), change, w) for w, record in progress.items()
                    for start, end in (record or {}).get("intervals") or () for t, change in ((start, 1), (end, -1)))
    calls: dict[int, int] = {}  # worker -> its calls training now
    training = peak = 0
    for _, change, w in events:  # at one instant, ends (-1) come before starts (+1)
        before = calls.get(w, 0)
        calls[w] = before + change
        training += (calls[w] > 0) - (before > 0)
        peak = max(peak, training)
    return peak


def build_result(config: TrainConfig, meta: dict[str, Any], progress: dict[int, dict | None], done: dict | None,
                 final_accuracy: float | None, error: str | None = None) -> dict[str, Any]:
    """The job's result record from every worker's final progress (state "failed" when any error)."""
    records = [r for r in progress.values() if r]
    errors = [r["error"] for r in records if r.get("error")]
    missing = [i for i, r in progress.items() if not r or r.get("state") not in FINAL]
    error = error or (errors[0] if errors else None)
    if error is None and missing:
        error = f"workers {missing} ended without a final record"
    samples = sum(int(r.get("samples", 0)) for r in records)
    started = [r["started_at"] for r in records if r.get("started_at")]
    ended = [t for t in (r.get("finished_at") or r.get("updated_at") for r in records) if t]
    train_s = (max(ended) - min(started)) if started and ended else None
    hist = merge_hists(progress)
    train_size = sum(int(r.get("shard_size", 0)) for r in records) or None
    result = {
        "job_id": meta["job_id"],
        "state": "failed" if error else "done",
        "error": error,
        "time_to_target_s": (done["at"] - meta["created_at"]) if done else None,
        "reached_target": done is not None,
        "epochs": (samples / train_size) if train_size else 0.0,
        "final_accuracy": final_accuracy,
        "accuracy_at_target": done["accuracy"] if done else None,
        "samples": samples,
        "samples_per_s": (samples / train_s) if train_s else 0.0,
        "pushes": sum(int(r.get("pushes", 0)) for r in records),
        "fetches": sum(int(r.get("fetches", 0)) for r in records),
        "conflicts": sum(int(r.get("conflicts", 0)) for r in records),
        "retries": sum(int(r.get("retries", 0)) for r in records),
        "staleness_p50": percentile_from_hist(hist, 50),
        "staleness_p99": percentile_from_hist(hist, 99),
        "wall_s": (max(ended) - meta["created_at"]) if ended else None,
        "max_concurrent_workers": intervals_peak(progress),
        "target_accuracy": config.target_accuracy,
        "number_of_workers": config.number_of_workers,
        "finished_at": time.time(),
    }
    return {key: result[key] for key in RESULT_KEYS}


def missing(job_id: str | None, error: str, target_accuracy: float | None = None) -> dict[str, Any]:
    """A failed result for a job whose records cannot be read (store gone, no answer before a timeout)."""
    result: dict[str, Any] = dict.fromkeys(RESULT_KEYS)
    result.update(job_id=job_id, state="failed", error=error, target_accuracy=target_accuracy,
                  reached_target=False, finished_at=time.time())
    return result


def finish_worker(store: ParameterStore, job_id: str, config: TrainConfig,
                  evaluate: Callable[[np.ndarray], float] | None) -> dict | None:
    """After a worker's final record: when every worker's record is final, write the result (once).

    The worker records decide, not a counter of calls, so a call that ends twice (a redelivery) or a
    crash between the final record and this check changes nothing: the next worker or supervisor to
    look writes it. `evaluate(weights) -> accuracy` evaluates the final weights. The result, or None.
    """
    progress = job.read_progress(store, job_id, config.number_of_workers)
    if not all(r and r.get("state") in FINAL for r in progress.values()):
        return None
    return write_result(store, job_id, evaluate)


def write_result(store: ParameterStore, job_id: str, evaluate: Callable[[np.ndarray], float] | None = None,
                 error: str | None = None) -> dict:
    """Assemble and write the result record once (an existing result is returned unchanged)."""
    existing = store.get_record(job_id, "result")
    if existing is not None:
        return existing
    config, meta = job.read_job(store, job_id)
    progress = job.read_progress(store, job_id, config.number_of_workers)
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

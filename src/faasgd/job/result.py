"""A job's result record: the one list of its keys and the one builder (written by faasgd.job.ending).

A result built from the workers' records (`build_result`) and the one a client reports when it
cannot read any record (store gone, timeout: `missing`) both have RESULT_KEYS. The CLI, test.sh's
CSV and tables, and the tests take their columns from here.

Honest measures: the stop rule reads validation accuracy; the final accuracies (validation and test)
are those of the job's model (faasgd.job.model_file): the parameters kept at the crossing, else the final ones.
`*_to_target` are measured at the crossing (samples: the workers' records read right after the fetch
of the parameters that met the target; records are written with each push, so that is what the model
was trained on), beside the totals.

A model no better than a constant: `majority_class_rate` is what always guessing the test rows' most common class
scores; `guesses_one_class` is true when the final test accuracy is within ONE_CLASS_TOLERANCE of what always
guessing some class scores (a model that learned nothing it shows: often a learning rate too small or too large
for the task), and then `warning` says so, naming the learning rate (`one_class_note`).

Clocks (the result's `clock` names the timeline's): every stamp is on the job's timeline
(ParameterStore.job_time: Redis TIME, 1 µs; on Memcached, whose clock has whole seconds, the hosts' own
time.time, 1 µs), read once per call and moved on by time.monotonic (worker/call_clock.py). A job's wall time
is the span of its workers' calls (`intervals`: from the first call's entry to the last call's last
record); `time_to_target_s` runs from that first entry to the crossing. `billed_s` adds up each call's
own time.monotonic duration.

CPU is counted, not sampled: `cpu_s` adds up the workers' records' `cpu_s` (each call from its entry to its last
record, on the process's CPU clock or the call's own threads', call_cpu.py; `cpu_clock` says which:
process, threads, or mixed), whatever profile_hz. `store_cpu_s` is the store servers' own count
(ParameterStore.server_cpu_s) at the result less its count when the job was created (the job's meta): all of the
servers' CPU over the job's span, another job's on the same servers included; None when either reading is unknown.
`cpu_s_per_sample` = (cpu_s + store_cpu_s where known) / samples. Not in them: the set-up call's CPU, the calls that
trained nothing (duplicates), and what the last worker does after its final record (evaluating the final
parameters below the target, writing this result).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from faasgd import cost, profile
from faasgd.config import TrainConfig
from faasgd.job.records import WORKER_ENDED_STATES
from faasgd.call_cpu import joined

# What a worker record's `time_split` names: gradient steps (loss, gradients, the update), gathering minibatches,
# evaluating parameters (the stop rule's checks, epoch ends, a kept model's test accuracy), loading the shard and
# the evaluation rows (downpour/worker.py adds to it)
SPLIT: tuple[str, ...] = ("compute", "batches", "eval", "load")

# What a run measured, in the order test.sh's CSV and tables show it. staleness_p50/p99: in minibatch steps of
# other workers applied between the parameters a push's oldest step was computed from and the push (downpour/comm.py).
MEASURES: tuple[str, ...] = (
    "time_to_target_s", "reached_target", "epochs_to_target", "samples_to_target",  # at the crossing
    "final_validation_accuracy", "final_test_accuracy",  # the job's model
    # what always guessing the test rows' most common class scores; the final test accuracy is what always guessing
    # one class scores (within ONE_CLASS_TOLERANCE): the model learned nothing it shows
    "majority_class_rate", "guesses_one_class",
    "epochs", "samples", "wall_s",  # totals: training after the crossing (until workers stop) included
    "samples_per_s", "pushes", "fetches", "conflicts", "retries", "staleness_p50", "staleness_p99",
    "max_concurrent_workers",  # the most workers that trained at the same time (intervals_peak)
    # downpour's updates as pushed (config push_codec: f32, f16, topk) and parameters fetched, all workers' and per
    # worker (their mean): the bytes of what was handed over, not the wire's (that is tx_bytes / rx_bytes)
    "push_bytes", "fetch_bytes", "push_bytes_per_worker", "fetch_bytes_per_worker",
    "residual_resets",  # calls that restarted error feedback from zeros: the one before died mid-call (downpour/residual.py)
    # synchronous algorithms (lambdaml/sync_worker.py; 0 for downpour): rounds run (every worker runs the same), the
    # rounds' object bytes written and read by all workers, their mean per worker, seconds waited at barriers (sum)
    "rounds", "round_bytes_written", "round_bytes_read", "round_bytes_per_worker", "barrier_wait_s",
    # stragglers (worker/straggler.py, downpour/staleness_bound.py): seconds slept on purpose by slowed workers (config
    # slow_factor, --chaos slow), the staleness bound's waits (max_staleness) and their seconds, every worker; backup
    # workers (lambdaml/rounds/exchange.py): rounds merged without a worker's contribution (all workers'), and the
    # contributions the rounds merged (exactly once: the workers' rounds less their late ones)
    "slowed_s", "bound_waits", "bound_wait_s", "late_rounds", "merged_contributions",
    # where downpour workers' time went (their time_split, perf_counter, every worker; 0 for synchronous algorithms):
    # gradient steps, gathering minibatches, evaluations, loading data, waiting on the store; worker_s is every
    # worker's calls' time on the job's timeline, compute_share = compute_s / worker_s
    "compute_s", "batches_s", "eval_s", "load_s", "comm_wait_s", "worker_s", "compute_share",
    # CPU-seconds, counted (see above): the workers', the store servers' over the job, both per sample trained
    "cpu_s", "store_cpu_s", "cpu_s_per_sample",
) + profile.MEASURES + cost.MEASURES  # resources: Driple's 12 figures, totals, peaks; billing and money (cost.py)
# Every key of a result record.
RESULT_KEYS: tuple[str, ...] = (
    ("job_id", "state", "error", "warning") + MEASURES
    + ("target_accuracy", "number_of_workers", "model_version", "finished_at", "clock", "cpu_clock",
       "resumed_from",  # the job this one resumed (faasgd resume; ending.count_on), else null
       "stragglers")  # the workers slowed on purpose: [{worker_id, slow_factor, slowed_s, steps}], [] when none
)
ONE_CLASS_TOLERANCE = 0.005  # how near a class's share of the test rows a test accuracy counts as guessing it


def class_shares(labels: np.ndarray) -> list[float]:
    """Each class's share of `labels` (the test rows'): what always guessing that class scores."""
    labels = np.asarray(labels)
    return (np.bincount(labels) / labels.size).tolist() if labels.size else []


def one_class_figures(test_accuracy: float | None, shares: Sequence[float]) -> dict[str, Any]:
    """majority_class_rate and guesses_one_class (the module's docstring); None for what cannot be told."""
    if not shares:
        return {"majority_class_rate": None, "guesses_one_class": None}
    guesses = None if test_accuracy is None else \
        any(abs(test_accuracy - share) <= ONE_CLASS_TOLERANCE for share in shares if share > 0)
    return {"majority_class_rate": max(shares), "guesses_one_class": guesses}


def one_class_note(test_accuracy: float, learning_rate: float) -> str:
    """What a result whose model guesses one class says, naming the learning rate (the CLI, test.sh's outputs)."""
    return (f"test accuracy {test_accuracy:.4f} is what always guessing one class scores: the model learned nothing "
            f"it shows; learning_rate {learning_rate:g} may be too small or too large for this task (try 10x either "
            f"way)")


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


def training_span(progress: dict[int, dict | None]) -> tuple[float, float] | None:
    """(first call's entry, last call's last record) over every worker's calls, on the job's timeline; None
    before any call began."""
    intervals = [(float(a), float(b)) for r in progress.values() for a, b in (r or {}).get("intervals") or ()]
    if not intervals:
        return None
    return min(a for a, _ in intervals), max(b for _, b in intervals)


def time_split(records: list[dict]) -> dict[str, float]:
    """compute_s ... comm_wait_s summed over the workers' records, their calls' time (worker_s), compute's share."""
    split = {f"{kind}_s": sum(float((r.get("time_split") or {}).get(kind, 0.0)) for r in records) for kind in SPLIT}
    split["comm_wait_s"] = sum(float(r.get("comm_wait_s") or 0.0) for r in records)
    split["worker_s"] = sum(float(b) - float(a) for r in records for a, b in r.get("intervals") or ())
    split["compute_share"] = split["compute_s"] / split["worker_s"] if split["worker_s"] > 0 else 0.0
    return split


def cpu_figures(records: list[dict], samples: int, created_cpu_s: float | None,
                server_cpu_s: float | None) -> dict[str, Any]:
    """cpu_s, store_cpu_s, cpu_s_per_sample and cpu_clock (the module's docstring) from the workers' records and the
    store servers' two readings (`created_cpu_s` in the job's meta, `server_cpu_s` now; a reading below the first
    means the servers restarted: unknown)."""
    workers = sum(float(r.get("cpu_s") or 0.0) for r in records)
    known = created_cpu_s is not None and server_cpu_s is not None and server_cpu_s >= created_cpu_s
    store = server_cpu_s - created_cpu_s if known else None
    clock = ""
    for record in records:
        clock = joined(clock, record["cpu_clock"]) if record.get("cpu_clock") else clock
    return {"cpu_s": workers, "store_cpu_s": store,
            "cpu_s_per_sample": (workers + (store or 0.0)) / samples if samples else None, "cpu_clock": clock or None}


@dataclass(frozen=True)
class Outcome:
    """What the job's end adds to its records (build_result): how it ended and what was read then."""

    final: dict | None = None  # without a crossing: the final parameters' {"validation", "test", "version"}, evaluated
    error: str | None = None  # the job failed with this (else a worker's error, if any)
    now: float | None = None  # on the job's timeline (None: this host's time.time)
    extra_calls: Sequence[dict] = ()  # calls no worker record holds (the set-up call, duplicates: "call" events)
    server_cpu_s: float | None = None  # the store servers' CPU count now (None: unknown)
    shares: Sequence[float] = ()  # each class's share of the test rows (class_shares; (): unknown)


def build_result(config: TrainConfig, meta: dict[str, Any], progress: dict[int, dict | None], done: dict | None,
                 outcome: Outcome = Outcome()) -> dict[str, Any]:
    """The job's result record from every worker's final progress (state "failed" when any error).

    `done`: the crossing record, whose model is the job's; else `outcome.final`, the final parameters' figures."""
    final, error, shares = outcome.final, outcome.error, outcome.shares
    now = time.time() if outcome.now is None else outcome.now
    records = [r for r in progress.values() if r]
    errors = [r["error"] for r in records if r.get("error")]
    missing = [i for i, r in progress.items() if not r or r.get("state") not in WORKER_ENDED_STATES]
    error = error or (errors[0] if errors else None)
    if error is None and missing:
        error = f"workers {missing} ended without a final record"
    samples = sum(int(r.get("samples", 0)) for r in records)
    span = training_span(progress)
    wall_s = (span[1] - span[0]) if span else 0.0
    hist = merge_hists(progress)
    train_size = meta.get("train_rows") or sum(int(r.get("shard_size", 0)) for r in records) or None
    model = {"validation": done["validation_accuracy"], "test": done["test_accuracy"], "version": done["version"]} \
        if done else (final or {})
    result = {
        "job_id": meta["job_id"],
        "state": "failed" if error else "done",
        "error": error,
        "time_to_target_s": max(0.0, done["at"] - span[0]) if done and span else None,
        "reached_target": done is not None,
        "epochs_to_target": done["epochs"] if done else None,
        "samples_to_target": done["samples"] if done else None,
        "final_validation_accuracy": model.get("validation"),
        "final_test_accuracy": model.get("test"),
        **one_class_figures(model.get("test"), shares),
        "epochs": (samples / train_size) if train_size else 0.0,
        "samples": samples,
        "wall_s": wall_s,
        "samples_per_s": (samples / wall_s) if wall_s > 0 else 0.0,
        "pushes": sum(int(r.get("pushes", 0)) for r in records),
        "fetches": sum(int(r.get("fetches", 0)) for r in records),
        "conflicts": sum(int(r.get("conflicts", 0)) for r in records),
        "retries": sum(int(r.get("retries", 0)) for r in records),
        "staleness_p50": percentile_from_hist(hist, 50),
        "staleness_p99": percentile_from_hist(hist, 99),
        "max_concurrent_workers": intervals_peak(progress),
        "push_bytes": sum(int(r.get("push_bytes") or 0) for r in records),
        "fetch_bytes": sum(int(r.get("fetch_bytes") or 0) for r in records),
        "push_bytes_per_worker": sum(int(r.get("push_bytes") or 0) for r in records) / max(1, len(records)),
        "fetch_bytes_per_worker": sum(int(r.get("fetch_bytes") or 0) for r in records) / max(1, len(records)),
        "residual_resets": sum(int(r.get("residual_resets") or 0) for r in records),
        "rounds": max((int(r.get("rounds") or 0) for r in records), default=0),
        "round_bytes_written": sum(int(r.get("round_bytes_written") or 0) for r in records),
        "round_bytes_read": sum(int(r.get("round_bytes_read") or 0) for r in records),
        "round_bytes_per_worker": sum(int(r.get("round_bytes_written") or 0) + int(r.get("round_bytes_read") or 0)
                                      for r in records) / max(1, len(records)),
        "barrier_wait_s": sum(float(r.get("barrier_wait_s") or 0.0) for r in records),
        "slowed_s": sum(float(r.get("slowed_s") or 0.0) for r in records),
        "bound_waits": sum(int(r.get("bound_waits") or 0) for r in records),
        "bound_wait_s": sum(float(r.get("bound_wait_s") or 0.0) for r in records),
        "late_rounds": sum(int(r.get("late_rounds") or 0) for r in records),
        "merged_contributions": sum(int(r.get("merged_contributions") or 0) for r in records),
        "stragglers": stragglers(records),
        **time_split(records),
        **cpu_figures(records, samples, meta.get("server_cpu_s"), outcome.server_cpu_s),
        **profile.job_figures(progress.values()),
        "target_accuracy": config.target_accuracy,
        "number_of_workers": config.number_of_workers,
        "model_version": model.get("version"),
        "finished_at": now,
        "clock": meta.get("clock"),
        "resumed_from": None,  # set by ending.count_on
    }
    result.update(cost.job_figures(progress.values(), outcome.extra_calls, result["wall_s"]))  # at the default prices
    result["warning"] = one_class_note(result["final_test_accuracy"], config.learning_rate) \
        if result["guesses_one_class"] and not error else None
    return {key: result[key] for key in RESULT_KEYS}


def stragglers(records: Sequence[dict]) -> list[dict[str, Any]]:
    """The workers slowed on purpose (a slow_factor above 1 in their record): which, by what factor, the seconds they
    slept and the steps they took."""
    return [{"worker_id": r.get("worker_id"), "slow_factor": float(r["slow_factor"]),
             "slowed_s": float(r.get("slowed_s") or 0.0), "steps": int(r.get("step") or 0)}
            for r in records if float(r.get("slow_factor") or 1.0) > 1.0]


def missing(job_id: str | None, error: str, target_accuracy: float | None = None) -> dict[str, Any]:
    """A failed result for a job whose records cannot be read (store gone, no answer before a timeout)."""
    result: dict[str, Any] = dict.fromkeys(RESULT_KEYS)
    result.update(job_id=job_id, state="failed", error=error, target_accuracy=target_accuracy,
                  reached_target=False, finished_at=time.time())
    return result

"""Running a batch: every configuration, every round, through a target's gateway; failures recorded.

Rounds are the outer loop, so slow drift of the machine spreads over all configurations. Round r
uses seed = the configuration's seed + r - 1 (recorded), so rounds differ in initialisation and
shuffling and the batch can be repeated exactly. A stacking matrix's runs go through stacking-driver
(stacking_runs.py); this file runs emnist's, whose costs it prices at the matrix's `prices` (the job's
result priced them at the defaults; faasgd.cost).
"""

from __future__ import annotations

import functools
import time
from typing import Callable

from faasgd import cost
from faasgd.batch import one_class, stacking_runs
from faasgd.batch.matrix import Configuration, Matrix
from faasgd.batch.targets import Target, cap_message, replicas_for
from faasgd.config import load_request
from faasgd.openfaas import SETUP_FUNCTION, json_answer, wait_for_job
from faasgd.job.result import MEASURES
from faasgd.local import bytes_between

RUN_KEYS = ("state", "error", "clock", "cpu_clock") + MEASURES  # what a run record takes from the job's result
CURVE_EVENTS = ("epoch", "check")  # the job's events that evaluate its parameters: epoch ends, Downpour's checks


def run_batch(matrix: Matrix, target: Target, rounds: int, run_timeout_s: float,
              progress: Callable[[str], None] = print, on_run: Callable[[int, dict], None] | None = None,
              on_job: Callable[[Configuration, dict, dict | None], None] | None = None) -> list[dict]:
    """All runs of the batch, in order; a failed run is a record with state "failed", never an exception.
    `on_run(index, record)` as each run ends (1-based index: the results database); `on_job(configuration, record,
    status)` then, for an emnist run: its job's final status with its events (None when the job never started)."""
    runs = []
    total = rounds * len(matrix.configurations)
    statuses: list[dict] = []  # the run's job's final status, handed out by run_one
    one, outcome = (stacking_runs.run_stacking, stacking_runs.outcome) if matrix.workload == "stacking" \
        else (functools.partial(run_one, keep=statuses.append), _outcome)
    for round_number in range(1, rounds + 1):
        for configuration in matrix.configurations:
            index = len(runs) + 1
            started = time.monotonic()
            record = one(configuration, round_number, target, run_timeout_s, progress)
            if matrix.workload == "emnist":
                record.update(cost.reprice(record, matrix.prices))
            runs.append(record)
            if on_run is not None:
                on_run(index, record)
            if on_job is not None and matrix.workload == "emnist":
                on_job(configuration, record, statuses.pop() if statuses else None)
            progress(f"[{index}/{total}] {configuration.label} round {round_number}: " + outcome(record)
                     + f" ({time.monotonic() - started:.1f} s)")
    return runs


def run_one(configuration: Configuration, round_number: int, target: Target, run_timeout_s: float,
            progress: Callable[[str], None], keep: Callable[[dict], None] | None = None) -> dict:
    """The run's record; `keep(status)`: its job's final status (events included), when the job started."""
    body = configuration.overrides()
    body["seed"] = int(body.get("seed", 0)) + round_number - 1
    config = load_request({}, body)
    record = {"config_id": configuration.config_id, "configuration": configuration.label,
              "varying": configuration.varying, "round": round_number, "config": config.to_dict(),
              "store": configuration.store, "job_id": None, "placement": [], "curve": [], "test_curve": [],
              "crossing": None, "link_bytes": None}
    message = cap_message(config.number_of_workers)
    if message and round_number == 1:
        progress(f"note: {message}")
    try:
        target.set_replicas(replicas_for(config.number_of_workers))
        links = target.link_bytes()  # with emulated nodes: their links' counters, before and after the job
        answer = json_answer(target.gateway.invoke(SETUP_FUNCTION, body), SETUP_FUNCTION)
        record["job_id"] = answer["job_id"]
        query = {**answer["status_query"], "events": "1", "profile": "1"}
        status = wait_for_job(lambda: target.gateway.job_status(query), run_timeout_s)
    except Exception as error:  # recorded; the batch goes on
        return {**record, "state": "failed", "error": f"{type(error).__name__}: {error}"}
    if keep is not None:
        keep(status)
    result = status.get("result") or {"state": "failed", "error": f"still running after {run_timeout_s:g} s"}
    record.update({key: result.get(key) for key in RUN_KEYS})
    record["config"] = status.get("config") or record["config"]  # the job's own, as its function resolved it
    record["placement"] = ["|".join(w.get("replicas") or []) if w else None for w in status["workers"]]
    record["curve"] = curve(status)
    record["test_curve"] = curve(status, "test_accuracy")
    record["crossing"] = crossing(status)
    if links is not None:
        record["link_bytes"] = bytes_between(links, target.link_bytes())
    record["profile"] = status.get("profiles") or []  # each worker's resource series: the run's profile plot
    return record


def curve(status: dict, measure: str = "accuracy") -> list[list[float]]:
    """[seconds since the job was created (store clock), validation accuracy] at every evaluation the job recorded,
    in time order: each evaluated epoch end (a Downpour job's: one worker a round, every worker at its last;
    worker/curve_rows.py) and each of Downpour's stop-rule checks between them (downpour/stop_rule.py: the crossing
    is usually one), so the curve holds the accuracies the target is checked on. `measure` "test_accuracy": the test
    accuracy of the same parameters where measured (reported, never a stop rule)."""
    created = status["created_at"]
    points = [[e["at"] - created, e[measure]] for e in status.get("events", [])
              if e.get("event") in CURVE_EVENTS and e.get(measure) is not None]
    return sorted(points)


def crossing(status: dict) -> list[float] | None:
    """[seconds since the job was created, validation accuracy] where the job met its target (its crossing record:
    the parameters kept as its model), or None."""
    done = status.get("done")
    if not done or done.get("at") is None:
        return None
    return [done["at"] - status["created_at"], done["validation_accuracy"]]


def _outcome(record: dict) -> str:
    if record.get("state") != "done":
        return f"FAILED: {record.get('error')}"
    ttt = record.get("time_to_target_s")
    reached = f"time to target {ttt:.1f} s" if ttt is not None else "target not reached"
    accuracy = f"done, {reached}, model's test accuracy {record.get('final_test_accuracy') or 0:.4f}"
    return f"{accuracy} ({one_class.note_of(record)})" if one_class.note_of(record) else accuracy

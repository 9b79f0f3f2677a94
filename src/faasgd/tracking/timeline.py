"""A job's evaluations as points in order: what the trackers plot and log.

Two kinds of event evaluate the job's parameters (the store's event list, faasgd.store.records):
- `check`: Downpour's stop rule between epoch ends (downpour/stop_rule.py) names `samples`, the samples in the
  parameters it checked;
- `epoch`: an evaluated epoch end (one worker a round, every worker at its last; worker/curve_rows.py). It names
  the worker's epoch, not the job's samples: workers run at their own pace, so the point takes the most samples a
  check has seen by then (a lower bound), and with no check before it (synchronous algorithms, whose workers move
  in step) `epoch x rows of the training set`.
Epoch events that carry no accuracy (another worker of the round evaluated) are no point.

Samples a second (Rate), the throughput the trackers plot beside the accuracy:
- the job's at each check (each evaluation where it has no checks): the samples in the parameters checked over the
  seconds since its run start (the first worker call's entry), so the last one meets the result's `samples_per_s`
  (samples over `wall_s`, measured from the same start);
- each worker's at each of its epoch ends, evaluated or not: epoch x its shard's rows over the seconds since its
  first call's entry (its record's `intervals`), its own samples as the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

EVALUATIONS = ("check", "epoch")  # as batch/runs.py's CURVE_EVENTS


@dataclass(frozen=True)
class Point:
    """One evaluation of the job's parameters."""

    at: float  # on the job's timeline (seconds since the epoch, the store's clock)
    samples: int  # samples trained into the parameters evaluated (the step of every tracker)
    accuracy: float  # validation accuracy
    test_accuracy: float | None  # test accuracy of the same parameters where measured (reported only)
    worker_id: int  # the worker that evaluated
    kind: str  # check | epoch
    epoch: int | None  # for an epoch end, the epoch it ended


def points(events: Iterable[dict], train_rows: int) -> list[Point]:
    """The evaluations among `events`, in time order; `train_rows`: the rows of the training set (epoch points)."""
    found, checked = [], 0
    for event in sorted((e for e in events if e.get("event") in EVALUATIONS), key=lambda e: float(e["at"])):
        if event["event"] == "check":
            checked = max(checked, int(event["samples"]))
        if event.get("accuracy") is None:
            continue
        epoch = event.get("epoch") if event["event"] == "epoch" else None
        samples = int(event["samples"]) if epoch is None else checked or int(epoch) * train_rows
        found.append(Point(at=float(event["at"]), samples=samples, accuracy=float(event["accuracy"]),
                           test_accuracy=event.get("test_accuracy"), worker_id=int(event.get("worker_id", 0)),
                           kind=event["event"], epoch=epoch))
    return found


@dataclass(frozen=True)
class Rate:
    """Samples a second at a moment of the job: the job's (worker_id None) or one worker's."""

    at: float  # on the job's timeline
    samples: int  # the step: the job's samples (a check's), or the worker's own
    samples_per_s: float
    worker_id: int | None


def job_rates(found: list[Point], start: float | None) -> list[Rate]:
    """The job's samples a second at each check (every point, when it has none: the synchronous algorithms)."""
    checks = [p for p in found if p.kind == "check"] or found
    if start is None:
        return []
    return [Rate(p.at, p.samples, p.samples / (p.at - start), None) for p in checks if p.at > start]


def worker_rates(events: Iterable[dict], workers: list[dict | None]) -> list[Rate]:
    """Each worker's samples a second at each of its epoch ends, in time order (a worker with no record yet, none)."""
    found = []
    for event in sorted((e for e in events if e.get("event") == "epoch"), key=lambda e: float(e["at"])):
        worker_id = int(event.get("worker_id", 0))
        record = (workers[worker_id] if worker_id < len(workers) else None) or {}
        starts = [float(a) for a, _ in record.get("intervals") or ()]
        samples, at = int(event["epoch"]) * int(record.get("shard_size") or 0), float(event["at"])
        if starts and samples and at > min(starts):
            found.append(Rate(at, samples, samples / (at - min(starts)), worker_id))
    return found


def train_rows(status: dict) -> int:
    """The rows of the job's training set: its workers' shards added up (their records say; 0 before they load)."""
    return sum(int((record or {}).get("shard_size") or 0) for record in status.get("workers") or ())


def run_start(status: dict) -> float | None:
    """The first worker call's entry on the job's timeline, where time_to_target_s starts (job/result.py)."""
    starts = [float(a) for record in status.get("workers") or () for a, _ in (record or {}).get("intervals") or ()]
    return min(starts) if starts else None

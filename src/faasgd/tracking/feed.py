"""Hands a job's evaluations to its trackers as they happen, and its end once it has one.

    feed = Feed(sinks(metrics_lines=True), job.events)   # read_events(start): the job's events from `start` on
    status = job.wait(on_status=feed)                      # each status read brings the new events' points
    feed.finish(status, status["result"])                  # the whole run: every sink writes what it keeps

A sink takes each point as the feed sees it (`point`, live: metric lines print then) and the whole run at the end
(`finish`: the MLPerf log, the TensorBoard files and the MLflow run are written from it, on the job's own clock, so
they read the same whenever they were written). A tracker that fails does not stop the others: TrackerFailed names
each after all have tried. `follow` does the above for an api.Job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TextIO

from faasgd.errors import ConfigError, TrackerFailed
from faasgd.job import result as results
from faasgd.tracking.timeline import Point, Rate, job_rates, points, run_start, train_rows, worker_rates


# The figures of a finished job the trackers report (job/result.py names them): at the target, the model's, the
# totals, what it cost
FINAL = ("time_to_target_s", "samples_to_target", "epochs_to_target", "reached_target", "final_validation_accuracy",
         "final_test_accuracy", "samples", "epochs", "wall_s", "samples_per_s", "cpu_s", "store_cpu_s",
         "cpu_s_per_sample", "billed_s", "cost_usd")


@dataclass(frozen=True)
class Run:
    """A job at its end, as the trackers record it."""

    job_id: str
    config: dict[str, Any]  # the job's resolved configuration (its status' `config`)
    result: dict[str, Any]  # its result record (job/result.py RESULT_KEYS)
    created_at: float | None  # when the job was created (the store's clock)
    run_start: float | None  # the first worker call's entry: where time_to_target_s starts
    crossing: dict[str, Any] | None  # the record of where it met its target (status `done`), or None
    train_rows: int  # rows of the training set (its workers' shards)
    points: list[Point] = field(default_factory=list)  # every evaluation, in time order
    workers: list[dict | None] = field(default_factory=list)  # each worker's final record
    worker_rates: list[Rate] = field(default_factory=list)  # each worker's samples a second at its epoch ends
    read_model: Callable[[], bytes] | None = None  # the job's model file (npz bytes, job/model_file.py), if it can be read

    def final(self) -> dict[str, float]:
        """FINAL's figures the result knows, as numbers (reached_target: 1 or 0)."""
        return {name: float(self.result[name]) for name in FINAL if self.result.get(name) is not None}

    def rates(self) -> list[Rate]:
        """The job's samples a second at each check, since its run start (timeline.job_rates)."""
        return job_rates(self.points, self.run_start)


class Sink(Protocol):
    """A tracker: sees each evaluation as it is read, then the finished run."""

    def point(self, point: Point) -> None: ...

    def finish(self, run: Run) -> None: ...


class Feed:
    """An on_status callback that reads the job's new events at each status read and hands their points on."""

    def __init__(self, trackers: list[Sink], read_events: Callable[[int], list[dict]],
                 read_model: Callable[[], bytes] | None = None):
        self.trackers, self.read_events, self.read_model = list(trackers), read_events, read_model
        self.events: list[dict] = []
        self.seen: set[tuple] = set()  # the points handed on: (at, worker_id, kind)

    def __call__(self, status: dict) -> None:
        if not status.get("workers"):  # not created yet, or the store unreachable for this read
            return
        self.events.extend(self.read_events(len(self.events)))
        for found in points(self.events, train_rows(status)):
            if (found.at, found.worker_id, found.kind) not in self.seen:
                self.seen.add((found.at, found.worker_id, found.kind))
                for tracker in self.trackers:
                    tracker.point(found)

    def finish(self, status: dict, final: dict) -> Run:
        """The job's end: the events not seen yet, then the run to every sink."""
        self(status)
        rows = train_rows(status)
        run = Run(job_id=final.get("job_id") or status.get("job_id"), config=status.get("config") or {},
                  result=final, created_at=status.get("created_at"), run_start=run_start(status),
                  crossing=status.get("done"), train_rows=rows, points=points(self.events, rows),
                  workers=list(status.get("workers") or ()), read_model=self.read_model,
                  worker_rates=worker_rates(self.events, list(status.get("workers") or ())))
        failed = []
        for tracker in self.trackers:  # each records the run whatever another's failure
            try:
                tracker.finish(run)
            except Exception as error:  # a tool's own errors (a server gone, a full disk): named, not typed here
                failed.append(f"{type(tracker).__name__}: {type(error).__name__}: {error}")
        if failed:
            raise TrackerFailed(f"job {run.job_id} ran; its trackers failed: " + "; ".join(failed))
        return run


def sinks(*, mllog: str | None = None, tensorboard: str | None = None, metrics_lines: bool = False,
          mlflow: str | None = None, stream: TextIO | None = None) -> list[Sink]:
    """The trackers asked for; each imports its tool's library only here (the extra `track`). A file's folder must
    exist (ConfigError naming the flag), checked before any job starts."""
    if mllog:
        in_folder("--mllog", mllog)
    if tensorboard:
        folder_to_be("--tensorboard", tensorboard)
    found: list[Sink] = []
    if metrics_lines:
        from faasgd.tracking.metric_lines import MetricLines
        found.append(MetricLines(stream))
    if mllog:
        from faasgd.tracking.mllog import MLLog
        found.append(MLLog(mllog))
    if tensorboard:
        from faasgd.tracking.tensorboard import TensorBoard
        found.append(TensorBoard(tensorboard))
    if mlflow:
        from faasgd.tracking.mlflow_run import MLflow
        found.append(MLflow(mlflow))
    return found


def in_folder(flag: str, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or os.path.isdir(path):
        raise ConfigError(flag, f"must be a file in an existing folder, got {path[:200]!r}")


def folder_to_be(flag: str, path: str) -> None:
    """A folder, or one to make in an existing folder."""
    folder = os.path.abspath(path)
    if not (os.path.isdir(folder) or (not os.path.exists(folder) and os.path.isdir(os.path.dirname(folder)))):
        raise ConfigError(flag, f"must be a folder, or one to make in an existing folder, got {path[:200]!r}")


def follow(job, trackers: list[Sink], timeout_s: float = 3600.0,
           on_status: Callable[[dict], None] | None = None) -> dict:
    """Wait for an api.Job with `trackers` fed as it runs; its final status (its result under "result")."""
    feed = Feed(trackers, job.events, job.model_bytes)

    def seen(status: dict) -> None:
        feed(status)
        if on_status is not None:
            on_status(status)

    status = job.wait(timeout_s, on_status=seen)
    feed.finish(status, status.get("result") or results.missing(job.job_id, f"no result after {timeout_s:g} s"))
    return status

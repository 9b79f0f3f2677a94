"""`./test.sh --mlflow [URI]`: a batch as one MLflow experiment, a parent run per configuration, its rounds as children.

    experiment  `test.sh <matrix name> <start time>` (one per batch), tagged with the matrix, target, rounds, folder
    parent run  one per configuration, made at its first round, named by its label (`number_of_workers=2 n_push=5`):
                params: the configuration's keys (the matrix's fixed and varying values); tags: config_id,
                faasgd.batch; metrics, when the batch ends: the mean over its rounds of each final figure the rounds
                know (feed.FINAL: time_to_target_s, cost_usd, ...), and rounds, rounds_done, rounds_reached_target
    child run   one per round, tagged `mlflow.parentRunId` (MLflow's nesting: the UI shows it under its parent):
                the job's run as `faasgd train --mlflow` logs it (mlflow_run.py: its resolved configuration, curves,
                samples a second, final figures, result.json), named `round <r> (<job_id>)`, tags config_id, round;
                its costs at the matrix's prices, as runs.csv has them. A round that failed before its job existed
                is a FAILED child with its error as a tag.

Written as each round ends (the parent's figures at the end), through MlflowClient: a tracking server or a backend of
MLflow's own (`sqlite:///mlflow.db`). The batch hands every value through its Redactor before it comes here.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric

from faasgd.tracking.feed import FINAL, Feed, Run
from faasgd.tracking.mlflow_run import log_to, ms, params_of


@dataclass(frozen=True)
class Round:
    """One round of one configuration of a batch, at its end."""

    config_id: int
    label: str  # the configuration's varying keys as text
    values: dict[str, Any]  # every key the matrix sets for it
    round_number: int
    status: dict | None  # the job's final status, events included (None: the round failed before its job existed)
    record: dict  # the batch's run record (its state, error and figures, costs at the matrix's prices)


def experiment_name(client: MlflowClient, matrix: str, started: str) -> str:
    """`test.sh <matrix> <started>`, with a number after it when a batch of that name and second exists already."""
    name, n = f"test.sh {matrix} {started}", 1
    while client.get_experiment_by_name(name if n == 1 else f"{name} ({n})") is not None:
        n += 1
    return name if n == 1 else f"{name} ({n})"


def artifacts_beside(uri: str) -> str | None:
    """Where the experiment keeps its artifacts: a SQLite backend's in `mlruns/` beside its file (test.sh runs from
    the repository's root, where MLflow's default `./mlruns` would land); a server's where the server says (None)."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):]).resolve().parent.joinpath("mlruns").as_uri()


def job_run(status: dict, record: dict) -> Run:
    """The round's job as the trackers record it, from its final status; its final figures the batch's record's."""
    result = {**(status.get("result") or {}), **{k: record[k] for k in FINAL if record.get(k) is not None}}
    return Feed([], lambda start: list(status.get("events") or ())[start:]).finish(status, result)


def means(finals: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's mean over the rounds that know it."""
    return {name: sum(f[name] for f in finals if name in f) / sum(1 for f in finals if name in f)
            for name in FINAL if any(name in f for f in finals)}


class BatchExperiment:
    """The batch's experiment; `round` as each round ends, `finish` once at the end."""

    def __init__(self, uri: str, matrix: str, started: str, tags: dict[str, str], client: MlflowClient | None = None):
        self.client = client or MlflowClient(tracking_uri=uri)
        self.name = experiment_name(self.client, matrix, started)
        self.experiment_id = self.client.create_experiment(self.name, artifact_location=artifacts_beside(uri),
                                                           tags=tags)
        self.parents: dict[int, str] = {}  # config_id -> its parent run's id
        self.rounds: dict[int, list[Round]] = {}
        self.finals: dict[int, list[dict[str, float]]] = {}

    def parent(self, found: Round) -> str:
        if found.config_id not in self.parents:
            run = self.client.create_run(self.experiment_id, run_name=found.label, tags={
                "config_id": str(found.config_id), "mlflow.source.name": "test.sh"})
            params = params_of(found.values)
            for i in range(0, len(params), 100):  # MLflow takes at most 100 params a call
                self.client.log_batch(run.info.run_id, params=params[i:i + 100])
            self.parents[found.config_id] = run.info.run_id
        return self.parents[found.config_id]

    def round(self, found: Round) -> str:
        """The round's child run under its configuration's parent; its id."""
        parent = self.parent(found)
        tags = {"mlflow.parentRunId": parent, "config_id": str(found.config_id), "round": str(found.round_number),
                "mlflow.source.name": "test.sh"}
        self.rounds.setdefault(found.config_id, []).append(found)
        # MLflow's client prints where a run on a server is viewed on stdout, which test.sh keeps for its progress
        with contextlib.redirect_stdout(sys.stderr):
            if found.status is None:
                return self.failed(found, tags)
            run = job_run(found.status, found.record)
            self.finals.setdefault(found.config_id, []).append(run.final())
            return log_to(self.client, self.experiment_id, run, f"round {found.round_number} ({run.job_id})", tags)

    def failed(self, found: Round, tags: dict[str, str]) -> str:
        error = str(found.record.get("error") or "failed")[:5000]
        run = self.client.create_run(self.experiment_id, run_name=f"round {found.round_number}",
                                     tags={**tags, "state": "failed", "error": error})
        self.client.set_terminated(run.info.run_id, status="FAILED")
        return run.info.run_id

    def finish(self) -> None:
        """Each parent's figures (means over its rounds) and its end: FINISHED when every round's job is done."""
        with contextlib.redirect_stdout(sys.stderr):
            for config_id, run_id in self.parents.items():
                rounds = self.rounds.get(config_id, [])
                finals = self.finals.get(config_id, [])
                counts = {"rounds": len(rounds),
                          "rounds_done": sum(1 for r in rounds if r.record.get("state") == "done"),
                          "rounds_reached_target": sum(1 for f in finals if f.get("reached_target") == 1.0)}
                now = ms(time.time())
                figures = {**means(finals), **counts}
                self.client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in figures.items()])
                done = counts["rounds_done"] == counts["rounds"]
                self.client.set_terminated(run_id, status="FINISHED" if done else "FAILED")


"""A worker's record: every field as dataclasses.asdict gives it, and a copy the worker's later steps never change."""

from __future__ import annotations

import dataclasses

from faasgd.worker.progress import FIELDS, WorkerProgress


def _busy_progress() -> WorkerProgress:
    progress = WorkerProgress.fresh(3, seed=7)
    progress.owner, progress.pushes, progress.step = "call-1/nonce", 4, 40
    progress.staleness_hist = {0: 2, 3: 1}
    progress.time_split = {"compute": 1.5, "batches": 0.25}
    progress.intervals = [[10.0, 11.5], [12.0, 12.0]]
    progress.replicas = ["replica-a"]
    progress.resources = {"cpu_s": 1.25, "samples": [[1.0, 2.0]], "by": {"store": (1, 2)}}
    progress.epoch_rng_state = progress.rng_state
    return progress


def test_the_record_holds_every_field_as_dataclasses_asdict_gives_it():
    progress = _busy_progress()
    record = progress.record(now=20.0)
    expected = dataclasses.asdict(progress)
    expected["staleness_hist"] = {"0": 2, "3": 1}
    expected["intervals"][-1] = [12.0, 20.0]
    assert {name: record[name] for name in FIELDS} == expected
    assert record["updated_at"] == 20.0 and record["samples_per_s"] == 0.0


def test_a_record_stays_as_taken_while_the_worker_goes_on():
    progress = _busy_progress()
    record = progress.record(now=20.0)
    taken = repr(record)
    progress.rng_state["state"]["state"] += 1
    progress.epoch_rng_state["state"]["inc"] += 1
    progress.time_split["compute"] += 1.0
    progress.intervals[0][1] = 99.0
    progress.replicas.append("replica-b")
    progress.resources["samples"][0].append(3.0)
    progress.resources["by"]["more"] = 1
    assert repr(record) == taken


def test_a_record_read_back_gives_the_same_progress():
    progress = _busy_progress()
    again = WorkerProgress.from_record(progress.record(now=20.0))
    assert again.rng_state == progress.rng_state and again.staleness_hist == progress.staleness_hist
    assert again.resources == progress.resources and again.pushes == progress.pushes

"""A worker's record: every field as dataclasses.asdict gives it (but the resource stats, which have a record of their
own, and the RNG states, packed), and a copy the worker's later steps never change."""

from __future__ import annotations

import dataclasses

import numpy as np

from faasgd.worker.progress import FIELDS, GROUPS, STRAGGLING_DEFAULTS, WorkerProgress, pack_rng, unpack_rng

# the record's keys: readers, status and resume read them by these names, whatever groups the progress has
RECORD_KEYS = (
    "worker_id rng_state state epoch step samples shard_size loss accuracy accuracy_epoch pushes fetches conflicts "
    "retries staleness_hist last_staleness train_s comm_wait_s time_split push_bytes fetch_bytes pushed_steps residual "
    "residual_resets started_at finished_at error replicas owner epoch_step epoch_rng_state epoch_loss_sum invocations "
    "intervals rounds round_bytes_written round_bytes_read barrier_wait_s params_digest billed_s billed_gb_s memory_mb "
    "cold_starts clock_error_s cpu_s cpu_clock samples_per_s "
    "updated_at").split()


def _busy_progress() -> WorkerProgress:
    progress = WorkerProgress.fresh(3, seed=7)
    progress.owner, progress.pushes, progress.step = "call-1/nonce", 4, 40
    progress.downpour.staleness_hist = {0: 2, 3: 1}
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
    for group in GROUPS:  # the record is flat: a group's fields beside the others
        expected.update(expected.pop(group))
    expected["staleness_hist"] = {"0": 2, "3": 1}
    expected["intervals"][-1] = [12.0, 20.0]
    del expected["resources"]  # in their own record, resources:<worker>, not with every push
    for name in STRAGGLING_DEFAULTS:  # left out at their defaults (a worker never slowed nor held)
        del expected[name]
    expected["rng_state"] = expected["epoch_rng_state"] = pack_rng(progress.rng_state)
    assert "resources" not in record
    assert {name: record[name] for name in FIELDS - {"resources"} - set(STRAGGLING_DEFAULTS)} == expected
    assert record["updated_at"] == 20.0 and record["samples_per_s"] == 0.0


def test_the_record_keeps_its_flat_keys_in_their_order_and_reads_back_into_the_groups():
    progress = _busy_progress()
    progress.downpour.conflicts, progress.lambdaml.rounds, progress.billing.cold_starts = 2, 5, 1
    record = progress.record(now=20.0)
    assert list(record) == RECORD_KEYS
    assert record["conflicts"] == 2 and record["rounds"] == 5 and record["cold_starts"] == 1
    again = WorkerProgress.from_record(record)
    assert (again.downpour.conflicts, again.lambdaml.rounds, again.billing.cold_starts) == (2, 5, 1)
    assert again.downpour.staleness_hist == {0: 2, 3: 1}


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
    assert again.rng_state == progress.rng_state and again.downpour.staleness_hist == progress.downpour.staleness_hist
    assert again.epoch_rng_state == progress.epoch_rng_state and again.pushes == progress.pushes
    assert again.resources == {}  # read from their own record by whoever resumes the worker


def test_a_packed_rng_state_draws_what_the_generator_would_have():
    rng = np.random.default_rng(12345)
    rng.integers(0, 10, 7)
    rng.random(3, dtype=np.float32)  # leaves a buffered half (has_uint32 1)
    state = rng.bit_generator.state
    packed = pack_rng(state)
    assert isinstance(packed, str) and len(packed) < 100 < len(str(state))
    again = np.random.default_rng()
    again.bit_generator.state = unpack_rng(packed)
    assert unpack_rng(packed) == state and again.random(5).tolist() == rng.random(5).tolist()
    assert unpack_rng(state) is state and pack_rng(None) is None  # a record written before packing reads as it was


def test_a_record_keeps_durations_to_the_microsecond_and_timestamps_whole():
    import json

    progress = WorkerProgress.fresh(0, 0)
    progress.train_s, progress.loss, progress.samples = 1.026803786999153, 0.5320122777029526, 55_000
    progress.time_split = {"compute": 0.5777286559982713}
    progress.started_at = 1796182805.817776
    record = progress.record(now=1796182807.8030655)
    assert record["train_s"] == 1.026804 and record["loss"] == 0.532012
    assert record["time_split"] == {"compute": 0.577729}
    assert record["started_at"] == 1796182805.817776 and record["updated_at"] == 1796182807.8030655  # whole
    assert record["samples_per_s"] == round(55_000 / 1.026803786999153, 1)
    assert progress.train_s == 1.026803786999153  # the worker's own figures are left as they are
    assert len(json.dumps(record, separators=(",", ":"))) < 950  # a fresh worker's record, as sent with a push (was 1.3 KB)


def test_a_slowed_or_held_worker_s_record_carries_its_straggling_figures_and_reads_them_back():
    progress = _busy_progress()
    progress.straggling.slow_factor, progress.straggling.slowed_s, progress.straggling.bound_waits = 4.0, 1.5, 2
    record = progress.record(now=20.0)
    assert {name: record.get(name) for name in STRAGGLING_DEFAULTS} == {
        "slow_factor": 4.0, "slowed_s": 1.5, "bound_waits": 2, "bound_wait_s": None, "late_rounds": None,
        "merged_contributions": None}  # the defaults left out
    back = WorkerProgress.from_record(record).straggling
    assert (back.slow_factor, back.slowed_s, back.bound_waits, back.bound_wait_s) == (4.0, 1.5, 2, 0.0)

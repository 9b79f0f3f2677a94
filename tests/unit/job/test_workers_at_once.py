"""Workers at once: the runtime's call slots, the sweep behind the result's max_concurrent_workers, the
status of a job whose workers wait, and supervision leaving waiting workers alone until start_timeout_s."""

import io
import uuid

import pytest
from rich.console import Console

from faasgd import job
from faasgd.job import result
from faasgd.cli.progress import LiveProgress, print_summary
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.functions import supervise
from faasgd.local.replicas.deployments import calls_per_replica
from faasgd.functions.workloads import run_loop_call
from faasgd.worker.invocation import Call
from faasgd.worker.call_clock import CallClock
from faasgd.worker.progress import WorkerProgress
from faasgd.store import open_store
from support.fake_clock import StepClock
from support.fake_pods import FakePods, fake_supervisor


def test_the_queue_gets_one_worker_per_call_the_replicas_run_at_once(tmp_path):
    supervisor = fake_supervisor(tmp_path, FakePods())
    train = supervisor.deployments["emnist-train"].spec
    setup = supervisor.deployments["emnist-setup"].spec
    per_setup, per_train = calls_per_replica(setup), calls_per_replica(train)
    assert (per_setup, per_train) == (4, int(train.environment["waitress_threads"]))  # template default, stack's
    others = sum(calls_per_replica(d.spec) * d.spec.min_replicas for name, d in supervisor.deployments.items()
                 if name not in ("emnist-setup", "emnist-train"))  # the stacking functions
    assert supervisor.call_slots() == 1 * per_setup + 2 * per_train + others  # scale.min replicas of each
    supervisor.scale("emnist-train", 5)
    assert supervisor.call_slots() == per_setup + 5 * per_train + others


@pytest.mark.parametrize("intervals, peak", [
    ({}, 0),
    ({0: None, 1: {"intervals": []}}, 0),
    ({0: {"intervals": [[0, 10]]}, 1: {"intervals": [[10, 20]]}, 2: {"intervals": [[20, 30]]}}, 1),  # waves
    ({0: {"intervals": [[0, 10]]}, 1: {"intervals": [[1, 9]]}, 2: {"intervals": [[2, 12]]}}, 3),
    ({0: {"intervals": [[0, 4], [6, 10]]}, 1: {"intervals": [[5, 7]]}, 2: {"intervals": [[4.5, 5.5]]}}, 2),
    ({0: {"intervals": [[0, 10], [2, 3]]}, 1: {"intervals": [[2.5, 8]]}}, 2),  # a duplicate call counts once
])
def test_the_sweep_finds_the_most_workers_training_at_the_same_time(intervals, peak):
    assert result.intervals_peak(intervals) == peak


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def call_at(ticks: Ticks, timeline: float, memory_mb: float = 1024.0, cold: bool = False) -> CallClock:
    """A call entering now whose timeline reads `timeline` at its entry."""
    clock = CallClock.begin(memory_mb, cold, monotonic=ticks)
    clock.timeline, clock.anchored_at = timeline, ticks()
    return clock


def test_each_call_adds_an_interval_that_its_records_close_and_bills_its_own_time():
    ticks = Ticks()
    progress = WorkerProgress.fresh(0, seed=1)
    progress.begin_call(call_at(ticks, 100.0, memory_mb=512, cold=True))
    ticks.t = 30.0
    first = progress.record()
    assert first["intervals"] == [[100.0, 130.0]] and first["started_at"] == 100.0
    assert first["billed_s"] == 30.0 and first["billed_gb_s"] == 15.0 and first["cold_starts"] == 1
    ticks.t = 40.0
    resumed = WorkerProgress.from_record(progress.record())
    ticks.t = 1000.0  # the next call enters later, on a warm replica with 2 GiB
    resumed.begin_call(call_at(ticks, 200.0, memory_mb=2048))
    ticks.t = 1050.0
    second = resumed.record()
    assert second["intervals"] == [[100.0, 140.0], [200.0, 250.0]] and second["started_at"] == 100.0
    assert second["billed_s"] == 40.0 + 50.0 and second["billed_gb_s"] == 20.0 + 100.0
    assert second["cold_starts"] == 1 and second["memory_mb"] == 2048


def config_for(**overrides):
    values = {"dataset": "synthetic", "train_samples": 900, "test_samples": 200, "hidden_sizes": [8],
              "batch_size": 50, "number_of_workers": 3, "n_fetch": 1, "n_push": 2, "max_epochs": 2,
              "target_accuracy": 1.0, "store_url": f"memory://conc{uuid.uuid4().hex[:8]}", "start_timeout_s": 10}
    return load_config({}, {**values, **overrides})


def test_workers_that_train_in_waves_are_reported_as_one_at_a_time():
    config = config_for()
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    for worker in range(3):  # one after the other: what a runtime with one slot does
        assert run_loop_call(Call(config, store, job_id, worker, f"call-{worker}", loader=load_shard))["state"] == "finished"
    final = store.get_record(job_id, "result")
    assert final["state"] == "done" and final["number_of_workers"] == 3 and final["max_concurrent_workers"] == 1


def test_status_names_the_workers_that_wait_while_others_train():
    config = config_for(number_of_workers=4)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    assert job.read_status(store, job_id)["waiting"] is None  # just fanned out: nobody trains yet
    store.put_record(job_id, "heartbeat:0", {"at": 1.0}, ttl_s=30)
    store.put_record(job_id, "progress:0", {"state": "running", "epoch": 1})
    store.put_record(job_id, "heartbeat:2", {"at": 1.0}, ttl_s=30)  # started, not pushed yet
    waiting = job.read_status(store, job_id)["waiting"]
    assert (waiting["workers"], waiting["training"]) == ([1, 3], 2)
    assert waiting["message"].startswith("workers [1, 3] have not started while 2 train")
    store.put_record(job_id, "progress:1", {"state": "finished"})
    store.put_record(job_id, "progress:3", {"state": "running"})  # a record, its heartbeat gone: not waiting
    assert job.read_status(store, job_id)["waiting"] is None


def test_watching_and_the_summary_say_how_many_trained_at_once():
    buffer = io.StringIO()
    out = Console(file=buffer, width=160, force_terminal=False)
    live = LiveProgress(out)
    status = {"state": "running", "config": {"max_epochs": 2}, "workers": [None, None],
              "waiting": {"workers": [1], "training": 1, "message": "workers [1] have not started while 1 train"}}
    live(status)
    live(status)  # the same wait: said once
    print_summary({**result.missing("j1", "x"), "number_of_workers": 9, "max_concurrent_workers": 6}, None, out)
    lines = buffer.getvalue().splitlines()
    assert lines.count("waiting: workers [1] have not started while 1 train") == 1
    assert "workers          9, at most 6 training at once" in lines


def test_supervision_leaves_a_waiting_worker_alone_until_start_timeout_s_then_re_invokes_it_once():
    config = config_for(number_of_workers=3, start_timeout_s=10)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    _, meta = job.read_job(store, job_id)
    clock, relaunched = StepClock(meta["created_at"]), []
    for w in (0, 1):  # two train; worker 2's call waits for a slot
        store.put_record(job_id, f"heartbeat:{w}", {"at": clock()}, ttl_s=60)
        store.put_record(job_id, f"progress:{w}", {"state": "running", "pushes": 3})
    for _ in range(9):  # every second, as every running worker and every status read looks
        clock.sleep(1)
        assert supervise.supervise(store, job_id, config, meta, relaunched.append, now=clock) == []
    assert relaunched == []
    clock.sleep(1.5)  # past start_timeout_s: it may have been dropped, so it is re-invoked, once
    assert supervise.supervise(store, job_id, config, meta, relaunched.append, now=clock) == \
        ["re-invoked worker 2 (1 of 3)"]
    assert supervise.supervise(store, job_id, config, meta, relaunched.append, now=clock) == []  # claimed
    assert [r.worker_id for r in relaunched] == [2]

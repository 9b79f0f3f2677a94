"""Both worker kinds implement the Worker protocol a call drives; the trainer is chosen by the job's algorithm;
Downpour's communication modes are schedules chosen once."""

from __future__ import annotations

import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.downpour import comm
from faasgd.downpour.schedule import Background, Blocking, Coalesce, schedule_for
from faasgd.downpour.worker import DownpourWorker, load_worker
from faasgd.errors import ConfigError
from faasgd.functions.workloads import loader_for
from faasgd.lambdaml.sync_worker import SyncWorker, load_sync_worker
from faasgd.store import open_store
from faasgd.worker.progress import WorkerProgress
from faasgd.worker.protocol import Worker


def config_of(name, **overrides):
    return load_config({}, {"dataset": "synthetic", "train_samples": 400, "test_samples": 100, "hidden_sizes": [8],
                            "batch_size": 40, "number_of_workers": 1, "max_epochs": 1,
                            "store_url": f"memory://kinds-{name}", **overrides})


def loaded(config):
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    trainer = loader_for(config)(config, store, job_id, WorkerProgress.fresh(0, config.seed))
    return trainer


@pytest.mark.parametrize("algorithm, kind", [("downpour", DownpourWorker), ("grad_avg", SyncWorker),
                                             ("model_avg", SyncWorker)])
def test_the_jobs_algorithm_picks_a_trainer_that_is_a_worker(algorithm, kind):
    trainer = loaded(config_of(algorithm, algorithm=algorithm))
    try:
        assert type(trainer) is kind and isinstance(trainer, Worker)
        assert trainer.has_pushed is False  # nothing checkpointed yet: a call may not hand off
    finally:
        trainer.comms.close()


def test_the_loaders_are_the_workloads_own():
    assert loader_for(config_of("d")) is load_worker
    assert loader_for(config_of("g", algorithm="grad_avg")) is load_sync_worker


def test_an_object_missing_a_member_is_no_worker():
    class Partial:
        def run_epoch(self):
            return True
    assert not isinstance(Partial(), Worker)


@pytest.mark.parametrize("mode, schedule, background", [("blocking", Blocking, False), ("background", Background, True),
                                                        ("coalesce", Coalesce, True)])
def test_each_mode_is_a_schedule_and_sets_the_channel(mode, schedule, background):
    trainer = loaded(config_of(f"mode-{mode}", communication=mode))
    try:
        assert type(trainer.exchange.schedule) is schedule and trainer.comms.background is background
    finally:
        trainer.comms.close()


def test_an_unknown_mode_names_the_field():
    with pytest.raises(ConfigError) as info:
        schedule_for("sometimes")
    assert info.value.field == "communication"


class InFlight:
    """An exchange as a schedule sees it, with an operation in flight (or not)."""

    def __init__(self, in_flight: bool, kind: str = comm.PUSH):
        self.comms = type("C", (), {"in_flight": in_flight})()
        self.op = comm.Op(kind, merge=False)
        self.fetched_once, self.push_due, self.fetch_wanted, self.synced = True, False, False, 0

    def sync(self):
        self.synced += 1

    def take_in_landed(self):
        self.synced += 1


def test_coalesce_serves_a_fetch_by_the_push_in_flight_and_puts_a_due_push_off():
    worker = InFlight(True)
    assert Coalesce().serves_fetch(worker) and worker.op.merge  # the push's result serves as the fetch
    assert Coalesce().puts_off_push(worker) and worker.push_due


def test_coalesce_leaves_a_fetch_to_the_put_off_push_and_waits_for_the_first_fetch():
    worker = InFlight(False)
    worker.push_due = True
    assert Coalesce().serves_fetch(worker) and worker.fetch_wanted
    first = InFlight(True)
    first.fetched_once = False
    assert not Coalesce().serves_fetch(first)


@pytest.mark.parametrize("schedule", [Blocking(), Background()])
def test_without_coalesce_every_fetch_and_due_push_goes_to_the_store(schedule):
    worker = InFlight(True)
    assert not schedule.serves_fetch(worker) and not schedule.puts_off_push(worker) and not worker.push_due


def test_only_blocking_takes_an_operation_in_at_submit():
    blocking, background = InFlight(False), InFlight(False)
    Blocking().after_submit(blocking)
    Background().after_submit(background)
    assert (blocking.synced, background.synced) == (1, 0)

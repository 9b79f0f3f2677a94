"""Jobs that always end, with every update applied once: hand-off and resume, superseded calls, supervision,
lost state. In process, on the memory store; time is a step clock where it matters."""

import uuid

import numpy as np
import pytest

from faasgd import job
from faasgd.job import ending, result
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.errors import StateLost
from faasgd.functions import orchestrate, supervise
from faasgd.functions.workloads import run_iteration, run_loop_call, run_worker
from faasgd.worker.invocation import Call
from faasgd.worker.budget import CallBudget
from faasgd.store import open_store
from support.fake_clock import StepClock

ROWS = 1200
TRAINED = ROWS - ROWS // 10  # the rows trained on: a tenth is held out for validation


def config_for(**overrides):
    values = {"dataset": "synthetic", "train_samples": ROWS, "test_samples": 300, "hidden_sizes": [16],
              "batch_size": 40, "update_rule": "sum", "number_of_workers": 1, "n_fetch": 1, "n_push": 3, "max_epochs": 3,
              "target_accuracy": 1.0, "store_url": f"memory://end{uuid.uuid4().hex[:8]}", "lease_s": 5,
              "start_timeout_s": 10, "max_reinvocations": 2}
    return load_config({}, {**values, **overrides})


def new_job(**overrides):
    config = config_for(**overrides)
    store = open_store(config.store_url)
    return config, store, job.create_job(store, config)


class StopAfter:
    """A budget that says 'draining' once `pushes` pushes of the job have been applied."""

    def __init__(self, store, job_id, pushes):
        self.store, self.job_id, self.pushes = store, job_id, pushes

    def __call__(self):
        return self.store.get_weights(self.job_id)[1] >= self.pushes


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
def test_a_call_handed_off_mid_epoch_resumes_and_trains_exactly_what_an_uninterrupted_run_trains(mode):
    plain_config, plain_store, plain_job = new_job(invocation_mode=mode)
    run_worker(Call(plain_config, plain_store, plain_job, 0))
    expected, expected_version = plain_store.get_weights(plain_job)

    config, store, job_id = new_job(invocation_mode=mode)
    chained, calls, iteration = [], 0, 0
    while iteration is not None:  # each call is stopped after 7 more pushes, then resumed by the chained call
        budget = CallBudget(draining=StopAfter(store, job_id, 7 * (calls + 1)))
        if mode == "loop":
            answer = run_loop_call(Call(config, store, job_id, 0, f"call-{calls}", loader=load_shard, budget=budget, chain=chained.append))
        else:
            answer = run_iteration(Call(config, store, job_id, 0, f"call-{calls}", iteration=iteration, loader=load_shard, budget=budget, chain=chained.append))
        calls += 1
        assert not answer["duplicate"]
        iteration = answer["next_iteration"]
    weights, version = store.get_weights(job_id)
    np.testing.assert_array_equal(weights, expected)  # the same steps, each applied once, in the same order
    record = store.worker_record(job_id, 0)
    assert version == expected_version == record["pushes"]
    assert record["samples"] == 3 * TRAINED and record["state"] == "finished" and record["invocations"] == calls
    assert chained and calls > 3  # it really was cut into pieces
    assert store.get_record(job_id, "result")["samples"] == 3 * TRAINED


def test_single_mode_hands_its_worker_to_emnist_train_in_the_jobs_own_store():
    # blocking: the budget reads the store's version right after a push, which must have landed by then
    config, store, job_id = new_job(invocation_mode="single", store="memcached", communication="blocking")
    relaunched = []
    answer = orchestrate.run_single(store, config, job_id, CallBudget(draining=StopAfter(store, job_id, 5)),
                                    relaunched.append)
    assert answer["state"] == "running" and answer["handed_off"]
    assert [(r.job_id, r.worker_id, r.iteration, r.store) for r in relaunched] == [(job_id, 0, 0, "memcached")]
    assert store.worker_record(job_id, 0)["pushes"] == 5


def test_a_second_invocation_of_a_worker_supersedes_the_first_which_stops_and_adds_nothing():
    config, store, job_id = new_job(max_epochs=2, communication="blocking")  # B takes over after A's 5th push landed
    takeover = {}

    def draining():  # after 5 pushes, A stalls past its lease; B takes the worker over and pushes once
        if store.get_weights(job_id)[1] >= 5 and not takeover:
            store.delete_record(job_id, "lease:0:loop")  # A's lease expired while it stalled
            takeover["b"] = run_loop_call(Call(config, store, job_id, 0, "call-b", loader=load_shard, budget=CallBudget(draining=StopAfter(store, job_id, 6)), chain=lambda i: None))
        return False

    a = run_loop_call(Call(config, store, job_id, 0, "call-a", loader=load_shard, budget=CallBudget(draining=draining), chain=lambda i: None))
    assert takeover["b"]["handed_off"]
    assert a["duplicate"] and "applied by another invocation" in a["reason"]  # A stopped at its next push
    record = store.worker_record(job_id, 0)
    assert record["owner"].startswith("call-b#") and record["pushes"] == 6 == store.get_weights(job_id)[1]


def test_a_silent_worker_is_re_invoked_and_after_max_reinvocations_without_progress_the_job_fails():
    config, store, job_id = new_job(number_of_workers=2, max_reinvocations=2, store="memcached")
    _, meta = job.read_job(store, job_id)
    clock, relaunched = StepClock(meta["created_at"]), []
    watch = lambda: supervise.supervise(store, job_id, config, meta, relaunched.append, now=clock)  # noqa: E731
    assert watch() == [] and relaunched == []  # launched just now: both may still be on their way
    clock.sleep(config.start_timeout_s + 1)
    assert watch() == ["re-invoked worker 0 (1 of 2)", "re-invoked worker 1 (1 of 2)"]
    assert [(r.worker_id, r.store) for r in relaunched] == [(0, "memcached"), (1, "memcached")]  # the job's store
    store.put_record(job_id, "heartbeat:1", {"at": clock()}, ttl_s=config.lease_s)  # worker 1 is alive now
    for key in ("supervising:0", "supervising:1"):
        store.delete_record(job_id, key)  # (the claims expire after start_timeout_s on the store's clock)
    assert watch() == []  # re-invoked moments ago: the new call has start_timeout_s to start
    clock.sleep(config.start_timeout_s + 1)
    assert watch() == ["re-invoked worker 0 (2 of 2)"]
    store.delete_record(job_id, "supervising:0")
    clock.sleep(config.start_timeout_s + 1)
    (failed,) = watch()
    assert failed.startswith("failed: worker 0 lost 3 time(s) (never started; re-invoked 2 time(s) without progress)")
    final = store.get_record(job_id, "result")
    assert final["state"] == "failed" and "worker 0 lost" in final["error"]


def test_progress_resets_the_count_of_re_invocations():
    config, store, job_id = new_job(number_of_workers=1, max_reinvocations=1)
    _, meta = job.read_job(store, job_id)
    clock, relaunched = StepClock(meta["created_at"] + 100), []
    store.put_record(job_id, "progress:0", {"pushes": 4, "state": "running", "epoch": 1})
    assert supervise.supervise(store, job_id, config, meta, relaunched.append, now=clock) == \
        ["re-invoked worker 0 (1 of 1)"]
    store.delete_record(job_id, "supervising:0")
    store.put_record(job_id, "progress:0", {"pushes": 9, "state": "running", "epoch": 2})  # it trained on
    assert supervise.supervise(store, job_id, config, meta, relaunched.append, now=clock) == \
        ["re-invoked worker 0 (1 of 1)"]
    assert len(relaunched) == 2 and store.get_record(job_id, "result") is None


def test_a_store_that_lost_the_job_fails_it_with_that_reason_and_nothing_is_re_initialised():
    config, store, job_id = new_job(max_epochs=5)

    def restarted_empty():
        if store.get_weights(job_id)[1] >= 4:
            store.client._values.clear()  # the store came back without the job
        return False

    with pytest.raises(StateLost):
        run_worker(Call(config, store, job_id, 0, "call-a", budget=CallBudget(draining=restarted_empty)))
    status = job.read_status(store, job_id)
    assert status["state"] == "failed" and "the store lost the job's state" in status["result"]["error"]
    assert store.get_record(job_id, "config") is None  # no job was made up again
    assert result.RESULT_KEYS == tuple(status["result"])


def test_a_worker_that_fails_fails_the_job_at_once_and_the_others_stop():
    config, store, job_id = new_job(number_of_workers=2, max_epochs=50)
    store.put_record(job_id, "progress:1", {"pushes": 0, "state": "failed", "error": "worker 1: MemoryError"})
    ending.write_result(store, job_id, error="worker 1: MemoryError")
    final = run_worker(Call(config, store, job_id, 0, "call-a"))
    assert final["epoch"] == 0 and final["state"] == "finished"  # it saw the job had ended
    assert store.get_record(job_id, "result")["error"] == "worker 1: MemoryError"

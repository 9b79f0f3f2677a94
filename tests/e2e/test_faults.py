"""Jobs that always end, with every update applied once, under faults injected as faults: processes
killed and terminated, the runtime itself killed, stores paused and replaced, deliveries dropped and
duplicated, calls cut by exec_timeout, a worker out of memory, replicas in a crash loop.

Each scenario runs its own `faasgd up` (Community Edition delivery: no retry of a failed call) and a
small job with lease_s=2, start_timeout_s=4, max_reinvocations=3, store_timeout_s=5 (tests/support/
faults.py). A job that survives must end `done` with exactly the pushes, version and samples of a
run without the fault; one that cannot must end `failed` with a reason naming the cause. Here each
fault runs in one mode on one store (a killed replica in both); bench/faults.py runs every fault in
both modes on both stores and prints the table.
"""

import pytest

from support import faults
from support.faults import Outcome

pytestmark = pytest.mark.e2e
DETECTION_S = 2 + faults.SUPERVISE_EVERY_S  # lease_s + how often someone looks: a lost worker is seen by then


@pytest.fixture
def runtime_for(tmp_path):
    started = []

    def start(*flags, stack=None):
        started.append(faults.fresh_runtime(tmp_path, *flags, stack=stack))
        return started[-1]

    yield start
    for runtime in started:
        runtime.stop()


def survived(outcome: Outcome) -> None:
    assert outcome.state == "done", (outcome.reason, outcome.notes)
    assert outcome.pushes == outcome.expected_pushes == outcome.version, outcome  # each push applied once
    assert outcome.samples == outcome.expected_samples, outcome  # no step trained twice, none skipped
    assert outcome.seconds < faults.END_BOUND_S


@pytest.mark.parametrize("mode, store", [("loop", "redis"), ("per-iteration", "memcached")])
def test_a_killed_replica_costs_its_call_and_nothing_else(runtime_for, mode, store):
    outcome = faults.run_scenario(runtime_for(), "kill replica", faults.kill_replica, mode, store)
    survived(outcome)
    assert outcome.notes[0].endswith("the last cut a call"), outcome.notes
    if mode == "loop":  # the cut call had pushed (its worker was at epoch 2): another call resumed its work
        assert outcome.invocations > 2


def test_a_terminated_replica_drains_and_hands_its_work_off(runtime_for):
    survived(faults.run_scenario(runtime_for(), "SIGTERM replica", faults.term_replica, "loop", "memcached"))


def test_the_runtime_killed_mid_job_and_started_again_keeps_the_job(runtime_for):
    runtime = runtime_for()
    stores_before = runtime.state["stores"]
    outcome = faults.run_scenario(runtime, "kill -9 runtime, up", faults.kill_runtime, "per-iteration", "memcached")
    survived(outcome)
    assert runtime.state["stores"] == stores_before  # the same store processes, adopted with the job's state


def test_a_store_paused_within_store_timeout_s_only_slows_the_job(runtime_for):
    survived(faults.run_scenario(runtime_for(), "store paused 2s", faults.pause_store(2), "loop", "memcached"))


@pytest.mark.parametrize("mode, store", [("loop", "redis"), ("per-iteration", "memcached")])
def test_a_store_paused_past_store_timeout_s_fails_the_job_naming_the_store_or_it_recovers_exactly(
        runtime_for, mode, store):
    """A worker that gave up on the store fails the job, if it can still record that once the store is
    back (its last writes retry for store_timeout_s too); if it could not, its worker looks lost when the
    store answers again and is re-invoked from its record. Either way the job ends, and nothing twice."""
    outcome = faults.run_scenario(runtime_for(), "store paused 5s", faults.pause_store(5), mode, store,
                                  store_timeout_s=2)
    if outcome.state == "failed":
        assert "store timeout" in outcome.reason and store in outcome.reason, outcome
        assert outcome.pushes == outcome.version  # what was applied is counted once, even in a failed job
    else:
        survived(outcome)


@pytest.mark.parametrize("mode, store", [("loop", "memcached")])
def test_a_store_restarted_empty_fails_the_job_as_lost_and_starts_nothing_again(runtime_for, mode, store):
    runtime = runtime_for()
    outcome = faults.run_scenario(runtime, "store restarted empty", faults.restart_store_empty, mode, store)
    assert outcome.state == "failed" and "lost the job's state" in outcome.reason, outcome
    assert outcome.seconds < DETECTION_S + 5
    assert outcome.version is None  # the empty store holds no job: nothing was re-initialised from scratch


@pytest.mark.parametrize("mode, store", [("per-iteration", "redis")])
def test_a_dropped_fan_out_delivery_is_re_invoked_after_start_timeout_s(runtime_for, mode, store):
    runtime = runtime_for("--chaos", "drop:emnist-train:1")
    outcome = faults.run_scenario(runtime, "first delivery dropped", faults.nothing, mode, store, at_epoch=0)
    survived(outcome)
    assert runtime.log().count("(dropped by --chaos)") == 1
    assert outcome.seconds >= 4  # the dropped worker was re-invoked once start_timeout_s had passed


@pytest.mark.parametrize("mode, store", [("loop", "redis"), ("per-iteration", "memcached")])
def test_every_call_delivered_twice_at_once_trains_once(runtime_for, mode, store):
    runtime = runtime_for("--chaos", "duplicate:emnist-train")
    survived(faults.run_scenario(runtime, "every call twice", faults.nothing, mode, store, at_epoch=0))
    twice = lambda log: log.count("duplicate (--chaos)") == log.count("first attempt 1") >= 2  # noqa: E731
    faults.wait_until(lambda: twice(runtime.log()), 20, "not every call was delivered twice")  # copies end later


@pytest.mark.parametrize("store", ["memcached"])
def test_loop_calls_cut_by_a_short_exec_timeout_hand_off_and_the_job_ends_exactly(runtime_for, tmp_path, store):
    """(Per-iteration calls train one epoch each: with these epochs no exec_timeout cuts them.)"""
    stack = faults.stack_copy(tmp_path / "stack", exec_timeout_s=6)
    outcome = faults.run_scenario(runtime_for(stack=stack), "exec_timeout 6s", faults.nothing, "loop", store,
                                  epochs=40, at_epoch=0)
    survived(outcome)
    assert outcome.invocations > 2  # calls were cut and handed off


def test_a_worker_out_of_memory_fails_the_job_at_once_naming_the_allocation(runtime_for):
    outcome = faults.run_scenario(runtime_for(), "out of memory", faults.cap_memory, "loop", "memcached",
                                  at_epoch=None, train_samples=60000, max_epochs=2)
    assert outcome.state == "failed" and "Unable to allocate" in outcome.reason, outcome
    assert outcome.seconds < 30


def test_replicas_in_a_crash_loop_fail_the_job_after_max_reinvocations(runtime_for):
    outcome = faults.run_scenario(runtime_for(), "crash loop", faults.crash_loop, "per-iteration", "memcached",
                                  max_reinvocations=1)
    assert outcome.state == "failed" and "re-invoked 1 time(s) without progress" in outcome.reason, outcome
    assert outcome.pushes == outcome.version
    assert outcome.seconds < 2 * (4 + DETECTION_S)  # two losses, each seen within start_timeout_s + detection

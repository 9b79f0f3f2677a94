"""Jobs that always end, with every update applied once, under faults injected as faults: processes
killed and terminated, the runtime itself killed, stores paused and replaced, deliveries dropped and
duplicated, calls cut by exec_timeout, a worker out of memory, replicas in a crash loop.

Each fault gets its own `faasgd up` (Community Edition delivery: no retry of a failed call) running
four jobs at once, loop and per-iteration on Redis and on Memcached (faasgd.testing.fault_matrix: 2
workers x 1000 synthetic rows, batch 16, n_fetch = n_push = 1, 8 epochs, lease_s=2,
start_timeout_s=4, max_reinvocations=3, store_timeout_s=5), and strikes them all at once,
mid-training. A job that survives must end `done` with exactly the pushes, version and samples of a
run without the fault; one that cannot must end `failed` with a reason naming the cause; every
job ends within the README's bound. bench/faults.py prints the same matrix as a table.
"""

import re

import pytest

from support.paths import ROOT

from faasgd.testing import fault_matrix, faults
from faasgd.testing.fault_matrix import COMBOS, Outcome

pytestmark = [pytest.mark.e2e, pytest.mark.serial]  # deadlines and kills: timed alone (make test)
DETECTION_S = 2 + fault_matrix.SUPERVISE_EVERY_S  # lease_s + how often someone looks: a lost worker is seen by then


@pytest.fixture
def runtime_for(tmp_path):
    started = []

    def start(*flags, stack=None):
        started.append(fault_matrix.fresh_runtime(ROOT, tmp_path / str(len(started)), *flags, stack=stack))
        return started[-1]

    yield start
    for runtime in started:
        runtime.stop()


def struck(outcomes: list[Outcome]) -> list[Outcome]:
    """Every (mode, store) ran, and every job was still training when the fault came."""
    assert [(o.mode, o.store) for o in outcomes] == list(COMBOS)
    assert not [o for o in outcomes if "the job had ended before the fault" in o.notes], outcomes
    return outcomes


def survived(outcome: Outcome) -> None:
    assert outcome.state == "done", (outcome.mode, outcome.store, outcome.reason, outcome.notes)
    assert outcome.pushes == outcome.expected_pushes == outcome.version, outcome  # each push applied once
    assert outcome.samples == outcome.expected_samples, outcome  # no step trained twice, none skipped
    assert outcome.seconds < fault_matrix.END_BOUND_S


def test_a_killed_replica_costs_its_calls_and_nothing_else(runtime_for):
    for outcome in struck(fault_matrix.run_matrix(runtime_for(), "SIGKILL replica", faults.kill_replica)):
        survived(outcome)
        assert outcome.notes[0].endswith("the last cut a call"), outcome.notes


def test_a_terminated_replica_drains_and_hands_its_work_off(runtime_for):
    for outcome in struck(fault_matrix.run_matrix(runtime_for(), "SIGTERM replica", faults.term_replica)):
        survived(outcome)


def test_the_runtime_killed_mid_job_and_started_again_keeps_every_job(runtime_for):
    runtime = runtime_for()
    stores_before = runtime.state["stores"]
    for outcome in struck(fault_matrix.run_matrix(runtime, "kill -9 runtime, up", faults.kill_runtime)):
        survived(outcome)
    assert runtime.state["stores"] == stores_before  # the same store processes, adopted with the jobs' state


def test_stores_paused_within_store_timeout_s_only_slow_the_jobs(runtime_for):
    for outcome in struck(fault_matrix.run_matrix(runtime_for(), "stores paused 2s", faults.pause_store(2))):
        survived(outcome)
        assert outcome.seconds >= 2


def test_stores_paused_past_store_timeout_s_fail_the_jobs_naming_the_store_or_they_recover_exactly(runtime_for):
    """A worker that gave up on the store fails its job, if it can still record that once the store is
    back (its last writes retry for store_timeout_s too); if it could not, its worker looks lost when the
    store answers again and is re-invoked from its record. Either way the job ends, and nothing twice."""
    runtime = runtime_for()
    outcomes = struck(fault_matrix.run_matrix(runtime, "stores paused 5s", faults.pause_store(5), store_timeout_s=2))
    for outcome in outcomes:
        if outcome.state == "failed":
            assert "store timeout" in outcome.reason and outcome.store in outcome.reason, outcome
            version, recorded = fault_matrix.applied_once(runtime, outcome)
            assert version == recorded, outcome  # what was applied is counted once, even in a failed job
        else:
            survived(outcome)


def test_stores_restarted_empty_fail_the_jobs_as_lost_and_start_nothing_again(runtime_for):
    for outcome in struck(fault_matrix.run_matrix(runtime_for(), "stores restarted empty", faults.restart_store_empty)):
        assert outcome.state == "failed" and "lost the job's state" in outcome.reason, outcome
        assert outcome.seconds < DETECTION_S + 5
        assert outcome.version is None  # the empty store holds no job: nothing was re-initialised from scratch


DROPPED = (("loop", "redis"), ("per-iteration", "memcached"))  # both modes, both stores (a runtime each: ~8 s)


@pytest.mark.parametrize("combo", DROPPED, ids=["-".join(c) for c in DROPPED])
def test_a_dropped_fan_out_delivery_is_re_invoked_as_soon_as_the_queue_reports_it(runtime_for, combo):
    runtime = runtime_for("--chaos", "drop:emnist-train:1")  # the first delivery: one job's, so a runtime each
    (outcome,) = fault_matrix.run_matrix(runtime, "first delivery dropped", faults.nothing, combos=[combo], at_epoch=0,
                                         start_timeout_s=60)
    survived(outcome)
    assert runtime.log().count("(dropped by --chaos)") == 1
    report = r"callback for \S+ to \S+/function/emnist-setup\?\S*delivery=1\S*: 200"
    assert re.search(report, runtime.log())  # the queue's callback told emnist-setup
    assert outcome.seconds < 30  # re-invoked on the report, not once start_timeout_s (60 s) had passed


def test_every_call_delivered_twice_at_once_trains_once(runtime_for):
    runtime = runtime_for("--chaos", "duplicate:emnist-train")
    for outcome in struck(fault_matrix.run_matrix(runtime, "every call twice", faults.nothing, at_epoch=0)):
        survived(outcome)
    twice = lambda log: log.count("duplicate (--chaos)") == log.count("first attempt 1") >= 8  # noqa: E731
    fault_matrix.wait_until(lambda: twice(runtime.log()), 20, "not every call was delivered twice")  # copies end later


def test_calls_cut_by_a_short_exec_timeout_hand_off_and_the_jobs_end_exactly(runtime_for, tmp_path):
    stack = fault_matrix.stack_copy(ROOT, tmp_path / "stack", exec_timeout_s=4)  # 0.5 s of training per call
    outcomes = fault_matrix.run_matrix(runtime_for(stack=stack), "exec_timeout 4s", faults.nothing, at_epoch=0,
                                 train_samples=8000)
    for outcome in struck(outcomes):
        survived(outcome)
        assert outcome.invocations > (2 if outcome.mode == "loop" else 2 * fault_matrix.EPOCHS)  # calls were cut


def test_a_worker_out_of_memory_fails_its_job_at_once_naming_the_allocation(runtime_for):
    # 240,000 rows: each worker's uint8 shard (108,000 x 784 = 81 MiB) is more than the cap leaves (64 MiB)
    outcomes = fault_matrix.run_matrix(runtime_for(), "out of memory", faults.cap_memory, at_epoch=None,
                                 train_samples=240000, max_epochs=2)
    for outcome in outcomes:
        assert outcome.state == "failed" and "Unable to allocate" in outcome.reason, outcome
        assert outcome.seconds < 30


def test_replicas_in_a_crash_loop_fail_the_jobs_after_max_reinvocations(runtime_for):
    # 40 epochs: a job seen at epoch 2 is far from its end when the killing starts (CI once saw one finish first)
    outcomes = fault_matrix.run_matrix(runtime_for(), "crash loop", faults.crash_loop, epochs=40, max_reinvocations=1)
    for outcome in struck(outcomes):
        assert outcome.state == "failed" and "re-invoked 1 time(s) without progress" in outcome.reason, outcome
        assert outcome.pushes == outcome.version
        assert outcome.seconds < 2 * (4 + DETECTION_S)  # two losses, each seen within start_timeout_s + detection

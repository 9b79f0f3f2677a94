"""Loop-mode workers at once on the local runtime: all of a job's workers train at the same time when the
replicas serve that many calls (the result says how many did), and when they cannot, the job's status
names the workers that wait while the others train, and its result says how many trained at once."""

import time
from pathlib import Path

import pytest
from support.hostile_runtime import runtime_up
from support.paths import ROOT

from faasgd.openfaas import wait_for_job
from faasgd.testing import stacks

pytestmark = pytest.mark.e2e
ACK_WAIT = ("--ack-wait", "120")  # the queue's redelivery: past any call of these jobs
# Long enough (3-4 s alone on the 2-core VM; 4 epochs took 1 s once workers loaded faster, and a loaded run
# then saw only 3 of 6 overlap) that every worker's training overlaps every other's when they all run.
JOB = {"dataset": "synthetic", "train_samples": 6000, "test_samples": 300, "hidden_sizes": [64], "batch_size": 8,
       "max_epochs": 16, "target_accuracy": 1.0, "invocation_mode": "loop"}


def limited_stack(tmp_path: Path) -> str:
    """stack.yml with one emnist-train replica running 2 calls at once, and no worker_slots (no refusal)."""
    def limit(stack: dict) -> None:
        for function in stack["functions"].values():
            function["environment"]["worker_slots"] = ""
        train = stack["functions"]["emnist-train"]
        train["labels"] = {"com.openfaas.scale.min": "1", "com.openfaas.scale.max": "1"}
        train["environment"]["waitress_threads"] = "2"
    return stacks.stack_copy(ROOT, tmp_path / "stack", edit=limit)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """A runtime of the repository's stack: emnist-train's 2 replicas run 4 calls each."""
    directory = tmp_path_factory.mktemp("full")
    with runtime_up(directory / ".faasgd", stacks.stack_copy(ROOT, directory / "stack"), *ACK_WAIT) as up:  # drain 1 s
        yield up.gateway


@pytest.fixture
def limited_runtime(tmp_path):
    with runtime_up(tmp_path / ".faasgd", limited_stack(tmp_path), *ACK_WAIT) as up:
        yield up.gateway


def run_job(gateway, workers, on_status=None):
    answer = gateway.invoke("emnist-setup", {**JOB, "number_of_workers": workers})
    assert answer.status == 202, answer.body
    query = answer.json()["status_query"]

    def read():
        status = gateway.job_status(query)
        if on_status is not None:
            on_status(status)
        return status

    return wait_for_job(read, 60, poll_s=0.2)


def test_six_loop_workers_all_train_at_once_and_the_result_says_so(runtime):
    began = time.monotonic()
    status = run_job(runtime, 6)
    assert status["state"] == "done", status["result"]
    assert status["result"]["number_of_workers"] == 6 and status["result"]["max_concurrent_workers"] == 6
    assert all(len(w["intervals"]) == 1 for w in status["workers"])  # one call each, none re-invoked
    assert time.monotonic() - began < 30


def test_a_loop_job_with_more_workers_than_the_function_ever_runs_at_once_is_refused(runtime):
    answer = runtime.invoke("emnist-setup", {**JOB, "number_of_workers": 21})  # worker_slots: 5 x 4
    assert answer.status == 400 and answer.json()["field"] == "number_of_workers"
    assert "at most 20 run at once" in answer.json()["error"]


def test_workers_that_cannot_all_run_at_once_are_named_in_the_status_and_the_result_counts_them(limited_runtime):
    seen = []
    status = run_job(limited_runtime, 4, lambda s: seen.append(s.get("waiting")))
    waits = [w for w in seen if w]
    assert status["state"] == "done", status["result"]
    assert waits and all(0 < w["training"] <= 2 and w["workers"] for w in waits), waits
    assert waits[0]["message"].startswith(f"workers {waits[0]['workers']} have not started while")
    assert status["result"]["max_concurrent_workers"] == 2 and status["result"]["number_of_workers"] == 4
    assert all(len(w["intervals"]) == 1 for w in status["workers"])  # no waiting worker was re-invoked

"""LambdaML's algorithms through the product: emnist-setup fans out emnist-train on ONE local runtime (`faasgd up`),
whose functions also have an S3 space (moto, started by the `s3_endpoint` fixture; keys as secret files) and the
DynamoDB channel's tables (`faasgd up --stores dynamodb`: the runtime's own server, tables and keys).

Covered end to end: the full product algorithm (grad_avg on lr, model_avg on svm, admm on lr) x sync (reduce,
reduce_scatter) x channel (Redis, Memcached, S3) x invocation mode (loop, per-iteration), 36 small jobs (about 10 s
on 2 cores), and kmeans (model_avg on blobs-like) in two of them; grad_avg and admm over DynamoDB in two more. Jobs run three at a time (six calls: below the runtime's 8 call slots, so every job's workers run
at once, as rounds need)."""

import hashlib
import io
import itertools
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.hostile_runtime import runtime_up
from support.paths import ROOT

from faasgd.openfaas import wait_for_job
from faasgd.testing.s3_server import preload_secrets, s3_stack

pytestmark = pytest.mark.e2e
BASE = {"dataset": "higgs-like", "train_samples": 300, "validation_samples": 60, "test_samples": 100,
        "batch_size": 32, "number_of_workers": 2, "max_epochs": 2, "target_accuracy": 1.0, "learning_rate": 0.5,
        "local_steps": 2, "round_timeout_s": 30, "profile_hz": 0}
ALGORITHMS = (("grad_avg", "lr"), ("model_avg", "svm"), ("admm", "lr"))
SYNCS, CHANNELS, MODES = ("reduce", "reduce_scatter"), ("redis", "memcached", "s3"), ("loop", "per-iteration")


def job_body(a, s, c, m):
    algorithm, model = ALGORITHMS[a]
    channel = CHANNELS[c]
    return {**BASE, "algorithm": algorithm, "model": model, "sync": SYNCS[s], "invocation_mode": MODES[m],
            "channel": "s3" if channel == "s3" else "store", "store": "redis" if channel == "s3" else channel}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, s3_endpoint):
    """The repository's stack, emnist-setup and emnist-train given an S3 space as a user would: s3_url in their
    environment, the s3-* secrets in the runtime's secret folder before it starts."""
    tmp = tmp_path_factory.mktemp("lambdaml")
    directory = tmp / ".faasgd"
    preload_secrets(directory, s3_endpoint)
    stack = s3_stack(ROOT, tmp / "stack", f"s3://{s3_endpoint.bucket}/lambdaml-e2e", prefixes=("emnist-",))
    with runtime_up(directory, stack, "--ack-wait", "120", "--stores", "dynamodb") as up:
        yield up.gateway


def calls_in_flight(gateway, function: str) -> int:
    """Calls the gateway forwarded to `function` and has not seen end: its /metrics' started less finished."""
    started = finished = 0.0
    for family in text_string_to_metric_families(gateway.request("GET", "/metrics").body.decode()):
        for sample in family.samples:
            if sample.labels.get("function_name") == function:
                started += sample.value if sample.name == "gateway_function_invocation_started" else 0.0
                finished += sample.value if sample.name == "gateway_function_invocation_total" else 0.0
    return round(started - finished)


def run_job(gateway, body):
    answer = gateway.invoke("emnist-setup", body)
    assert answer.status == 202, answer.body
    query = answer.json()["status_query"]
    status = wait_for_job(lambda: gateway.job_status(query), 60, poll_s=0.2)
    return status, query


def test_every_combination_ends_done_with_rounds_bytes_and_equal_parameters(runtime):
    bodies = [job_body(*row) for row in itertools.product(range(3), range(2), range(3), range(2))]
    bodies += [{**BASE, "dataset": "blobs-like", "model": "kmeans", "algorithm": "model_avg", "sync": sync,
                "invocation_mode": mode, "channel": channel, "store": store}
               for sync, mode, channel, store in (("reduce", "loop", "store", "memcached"),
                                                  ("reduce_scatter", "per-iteration", "s3", "redis"))]
    bodies += [{**BASE, "algorithm": algorithm, "model": "lr", "sync": sync, "invocation_mode": mode,
                "channel": "dynamodb", "store": store}
               for algorithm, sync, mode, store in (("grad_avg", "reduce_scatter", "per-iteration", "redis"),
                                                    ("admm", "reduce", "loop", "memcached"))]
    with ThreadPoolExecutor(3) as pool:
        finished = list(pool.map(lambda body: run_job(runtime, body), bodies))
    for body, (status, query) in zip(bodies, finished):
        result, what = status["result"], {k: body[k] for k in ("algorithm", "model", "sync", "channel", "store",
                                                                 "invocation_mode")}
        assert status["state"] == "done", (what, result and result["error"])
        rounds_per_epoch = -(-(-(-120 // 32)) // 2) if body["algorithm"] == "model_avg" else -(-120 // 32)
        rounds_per_epoch = 1 if body["model"] == "kmeans" else rounds_per_epoch  # a Lloyd iteration over the shard
        assert result["rounds"] == 2 * rounds_per_epoch, what
        assert result["round_bytes_written"] > 0 and result["round_bytes_read"] > 0, what
        assert result["round_bytes_per_worker"] > 0 and result["barrier_wait_s"] >= 0, what
        digests = {w["params_digest"] for w in status["workers"]}
        with np.load(io.BytesIO(runtime.model_file(query)), allow_pickle=False) as npz:
            params = npz["params"]
        assert digests == {hashlib.sha256(params.astype("<f4").tobytes()).hexdigest()}, what  # the job's weights
        assert result["final_validation_accuracy"] > (0.3 if body["model"] == "kmeans" else 0.5), what
        if body["invocation_mode"] == "per-iteration":
            assert all(w["invocations"] == 2 for w in status["workers"]), what  # one call per epoch


@pytest.mark.parametrize("body, field", [
    ({"algorithm": "downpour", "channel": "s3"}, "channel"),
    ({"algorithm": "grad_avg", "sync": "async", "model": "lr"}, "sync"),
    ({"algorithm": "admm", "model": "mlp"}, "model"),
])
def test_bad_combinations_are_400_naming_the_field(runtime, body, field):
    answer = runtime.invoke("emnist-setup", {**BASE, **body})
    assert answer.status == 400 and answer.json()["field"] == field, answer.body


def model_digest(gateway, query) -> str:
    with np.load(io.BytesIO(gateway.model_file(query)), allow_pickle=False) as npz:
        return hashlib.sha256(npz["params"].astype("<f4").tobytes()).hexdigest()


@pytest.mark.serial  # the kill must land mid-round: beside another test under -n 2 it landed between calls
@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
def test_a_replica_killed_mid_round_is_re_invoked_from_its_checkpoint_to_the_same_bits(runtime, mode):
    """A fault as a fault: every emnist-train replica SIGKILLed while a grad_avg job is between epochs 1 and 3.
    Supervision re-invokes the lost workers from their checkpoints; the peers wait at the barrier meanwhile;
    the job ends done with the rounds and the model bit for bit of the same job run without the fault."""
    body = {**BASE, "algorithm": "grad_avg", "model": "lr", "sync": "reduce", "channel": "store", "store": "redis",
            "invocation_mode": mode, "train_samples": 2400, "max_epochs": 4, "lease_s": 2, "start_timeout_s": 4,
            "round_timeout_s": 60}
    clean, clean_query = run_job(runtime, body)
    assert clean["state"] == "done", clean["result"]
    answer = runtime.invoke("emnist-setup", body)
    assert answer.status == 202, answer.body
    query = answer.json()["status_query"]
    status, deadline = None, time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for the first epoch's end, then kill
        status = runtime.job_status(query)
        if status["state"] != "running" or any(w and w.get("epoch", 0) >= 1 for w in status["workers"]):
            break
        time.sleep(0.05)
    assert status["state"] == "running", "the job ended before the fault: make it longer"
    pids = runtime.request("GET", "/system/function/emnist-train").json()["pids"]
    # per-iteration calls are short and a kill between two of them costs no call: strike while one is in flight
    deadline = time.monotonic() + 30
    while not calls_in_flight(runtime, "emnist-train"):
        assert time.monotonic() < deadline, "no emnist-train call was in flight for 30 s: nothing to strike"
        time.sleep(0.005)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    status = wait_for_job(lambda: runtime.job_status(query), 90, poll_s=0.2)
    assert status["state"] == "done", status["result"]
    assert status["result"]["rounds"] == clean["result"]["rounds"]
    assert sum(w["invocations"] for w in status["workers"]) > sum(w["invocations"] for w in clean["workers"])
    assert model_digest(runtime, query) == model_digest(runtime, clean_query)  # every round applied exactly once

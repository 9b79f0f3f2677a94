"""Traces on the local runtime: replicas export their spans with the `faasgd-file` exporter, and one job's spans
form one tree across processes, through the gateway (sync) and the queue (async fan-out, per-iteration chaining);
`faasgd status JOB --trace` prints it."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from faasgd.local.lifecycle import credentials
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient, wait_for_job
from faasgd.tracing import tree
from support.paths import ROOT

pytestmark = pytest.mark.e2e
JOB = {"dataset": "synthetic", "train_samples": 600, "test_samples": 100, "hidden_sizes": [8], "batch_size": 60,
       "max_epochs": 2, "target_accuracy": 1.0, "number_of_workers": 2, "invocation_mode": "per-iteration"}


def faasgd(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def traced_stack(tmp_path: Path, traces: Path) -> Path:
    """stack.yml's emnist-setup and emnist-train (one replica each), exporting spans into `traces`."""
    stack = yaml.safe_load((ROOT / "stack.yml").read_text())
    stack["functions"] = {name: stack["functions"][name] for name in ("emnist-setup", "emnist-train")}
    for function in stack["functions"].values():
        function["handler"] = str(ROOT / function["handler"])
        function["labels"] = {"com.openfaas.scale.min": "1", "com.openfaas.scale.max": "1"}
        function["environment"].update({"OTEL_TRACES_EXPORTER": "faasgd-file", "FAASGD_TRACES_DIR": str(traces),
                                        "worker_slots": "4"})
    path = tmp_path / "stack.yml"
    path.write_text(yaml.safe_dump(stack))
    return path


def spans_of(traces: Path, job_id: str, wanted: int, timeout_s: float = 10.0) -> list[tree.Node]:
    """The job's trees once `wanted` spans are on disk (the last train span ends just after the job does)."""
    deadline = time.monotonic() + timeout_s
    while True:
        roots = tree.job_trees(tree.read_spans(traces), job_id)
        count = sum(1 for r in roots for _ in walk(r))
        if count >= wanted or time.monotonic() > deadline:
            return roots
        time.sleep(0.2)


def walk(node):
    yield node
    for child in node.children:
        yield from walk(child)


def test_a_jobs_spans_form_one_tree_across_the_gateway_and_the_queue(tmp_path):
    traces, directory, port = tmp_path / "traces", tmp_path / ".faasgd", free_port()
    up = faasgd("up", "-f", str(traced_stack(tmp_path, traces)), "--port", str(port), "--dir", str(directory))
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        state = json.loads((directory / "state.json").read_text())
        gateway = GatewayClient(state["gateway_url"], 30, auth=credentials.read(directory / "secrets"))
        answer = gateway.invoke("emnist-setup", JOB)
        assert answer.status == 202, answer.body
        job_id = answer.json()["job_id"]
        status = wait_for_job(lambda: gateway.job_status({"job_id": job_id}), 60, poll_s=0.2)
        assert status["state"] == "done", status
        # setup + 2 fan-out calls + 4 trains (2 workers x 2 iterations) + 2 chained calls, and store spans
        roots = spans_of(traces, job_id, wanted=9 + 8)
    finally:
        assert faasgd("down", "--dir", str(directory)).returncode == 0
    assert [r.span["name"] for r in roots] == ["setup"] and roots[0].span["service"] == "emnist-setup"
    calls = roots[0].children
    calls = [c for c in calls if c.span["name"] == "call emnist-train"]
    assert len(calls) == 2 and all(c.span["service"] == "emnist-setup" for c in calls)
    trains = [n for n in walk(roots[0]) if n.span["name"] == "train"]
    assert sorted((n.span["attributes"]["faasgd.worker_id"], n.span["attributes"]["faasgd.iteration"])
                  for n in trains) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(n.span["service"] == "emnist-train" for n in trains)
    for call in calls:  # fan-out: setup -> call -> train(iteration 0) -> call -> train(iteration 1), one worker
        [first] = [c for c in call.children if c.span["name"] == "train"]
        assert first.span["attributes"]["faasgd.iteration"] == 0
        [chained] = [c for c in first.children if c.span["name"] == "call emnist-train"]
        [second] = [c for c in chained.children if c.span["name"] == "train"]
        assert second.span["attributes"]["faasgd.iteration"] == 1
        assert second.span["attributes"]["faasgd.worker_id"] == first.span["attributes"]["faasgd.worker_id"]
        assert {"store.fetch", "store.push_update"} <= {c.span["name"] for c in first.children}
    printed = faasgd("status", job_id, "--trace", "--trace-dir", str(traces))
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[0].startswith("setup  [emnist-setup]")
    assert sum(1 for line in lines if line.lstrip().startswith("train  [emnist-train]")) == 4

"""The runtime's broker killed with SIGKILL mid-job (`faasgd up`, two jobs at once: loop on Redis and
per-iteration on Memcached, whose every epoch is a new call through the queue): status reads keep answering
within a second while nats-server is down and while the watch starts it again, the broker comes back on its
store (state.json names the new process, so `faasgd down` stops it), and each job ends: done exactly, or
failed naming the queue."""

import json
import os
import signal
import time

import httpx
import pytest

from faasgd.testing import fault_matrix
from support.paths import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
READ_BOUND_S = 1.0
COMBOS = (("loop", "redis"), ("per-iteration", "memcached"))


def kill_broker_and_read(reads: list[float]):
    def inject(runtime: fault_matrix.Runtime, queries: list[dict]) -> str:
        os.kill(runtime.state["broker"]["pid"], signal.SIGKILL)
        for i in range(20):
            started = time.monotonic()
            status = runtime.gateway.job_status(queries[i % len(queries)], timeout_s=5)
            reads.append(time.monotonic() - started)
            assert status["state"] in ("running", "done", "failed")
            time.sleep(0.05)
        return "nats-server killed"
    return inject


def test_a_killed_broker_comes_back_reads_stay_bounded_and_the_jobs_end(tmp_path):
    runtime = fault_matrix.fresh_runtime(ROOT, tmp_path)
    try:
        first = runtime.state["broker"]
        reads: list[float] = []
        outcomes = fault_matrix.run_matrix(runtime, "kill -9 nats-server", kill_broker_and_read(reads),
                                           combos=COMBOS, at_epoch=1)
        assert len(reads) == 20 and max(reads) < READ_BOUND_S, reads
        state = json.loads((runtime.directory / "state.json").read_text())
        assert state["broker"]["pid"] != first["pid"] and state["broker"]["url"] == first["url"]
        assert httpx.get(runtime.state["gateway_url"] + "/healthz", timeout=5).status_code == 200
        assert "nats-server (the async queue) was down; started it again" in runtime.log()
        for outcome in outcomes:
            if outcome.state == "failed":
                assert "queue" in outcome.reason, outcome
            else:
                assert outcome.exact and outcome.seconds < fault_matrix.END_BOUND_S, outcome
    finally:
        runtime.stop()

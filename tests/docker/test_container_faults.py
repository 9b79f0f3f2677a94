"""The process backend's fault matrix (tests/e2e/test_faults.py), struck at containers: four jobs at once
(loop and per-iteration, on Redis and on Memcached) hit mid-training by `docker kill`, by `docker stop`
(SIGTERM: of-watchdog drains, the work is handed off) and by scaling 2 -> 4 -> 1; every job ends done
with exactly the pushes, version and samples of a run without the fault."""

from __future__ import annotations

import pytest

from faasgd.testing import fault_matrix
from faasgd.testing.fault_matrix import COMBOS, Outcome
from support import container_faults
from support.container_faults import wait_available

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(1200)]


def survived(outcomes: list[Outcome]) -> None:
    assert [(o.mode, o.store) for o in outcomes] == list(COMBOS)
    assert not [o for o in outcomes if "the job had ended before the fault" in o.notes], outcomes
    for outcome in outcomes:
        assert outcome.state == "done", (outcome.mode, outcome.store, outcome.reason, outcome.notes)
        assert outcome.pushes == outcome.expected_pushes == outcome.version, outcome  # each push applied once
        assert outcome.samples == outcome.expected_samples, outcome  # no step trained twice, none skipped
        assert outcome.seconds < fault_matrix.END_BOUND_S
    print("\n" + "\n".join(o.row() for o in outcomes))


def test_a_killed_container_costs_its_calls_and_nothing_else(deployed):
    outcomes = fault_matrix.run_matrix(deployed["runtime"], "docker kill", container_faults.docker_kill)
    survived(outcomes)
    assert outcomes[0].notes[0].endswith("the last cut a call"), outcomes[0].notes


def test_a_stopped_container_drains_and_hands_its_work_off(deployed):
    survived(fault_matrix.run_matrix(deployed["runtime"], "docker stop", container_faults.docker_stop))


def test_scaling_2_to_4_to_1_mid_job_loses_and_repeats_nothing(deployed):
    runtime = deployed["runtime"]
    try:
        survived(fault_matrix.run_matrix(runtime, "scale 2-4-1", container_faults.scale_up_and_down))
    finally:
        runtime.gateway.scale("emnist-train", 2)
        wait_available(runtime)  # the next test finds the deployment as faas-cli up left it

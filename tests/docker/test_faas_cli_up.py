"""`faas-cli up` for real against `faasgd up --backend docker`: the images faas-cli built and pushed to the
runtime's registry are pulled by the deploy and run as containers under the real of-watchdog, and jobs
fan out between those containers through the gateway to done, exactly, on Redis and on Memcached."""

from __future__ import annotations

import json

import httpx
import psutil
import pytest

from faasgd.local.services import docker_cli
from faasgd.testing import fault_matrix, faults
from faasgd.testing.fault_matrix import COMBOS

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(1200)]


def containers(runtime, function: str) -> list[str]:
    label = f"faasgd.runtime={runtime.state['runtime_id']}"
    return docker_cli.docker("ps", "-q", "--filter", f"label={label}", "--filter",
                             f"label=faas_function={function}").split()


def test_faas_cli_up_builds_pushes_to_the_runtimes_registry_and_the_deploy_pulls_from_it(deployed):
    runtime, registry = deployed["runtime"], deployed["registry"]
    assert registry.startswith("127.0.0.1:")
    catalog = httpx.get(f"http://{registry}/v2/_catalog", trust_env=False, timeout=5).json()["repositories"]
    assert sorted(catalog) == ["emnist-setup", "emnist-train"]
    for image in deployed["images"]:
        assert f"faasgd runtime: pulled {image}" in runtime.log()  # each deploy pulled its image from there
    for function, image in zip(("emnist-setup", "emnist-train"), deployed["images"]):
        status = runtime.gateway.function_status(function)
        assert status["image"] == image
        running = containers(runtime, function)
        assert len(running) == status["replicas"] == status["availableReplicas"]
        for container in running:
            assert docker_cli.inspect("container", container)["Config"]["Image"] == image
    print(f"\nfaas-cli up (build, push, deploy) and the runtime: {deployed['seconds']:.0f} s")


def test_a_replica_runs_fwatchdog_as_pid_1_and_the_function_as_the_images_user(deployed):
    runtime = deployed["runtime"]
    container = containers(runtime, "emnist-train")[0]
    found = docker_cli.inspect("container", container)
    image_user = docker_cli.inspect("image", found["Config"]["Image"])["Config"]["User"]
    assert image_user == "app"  # the template's non-root user
    assert docker_cli.docker("exec", container, "cat", "/proc/1/cmdline").split("\0")[0] == "fwatchdog"
    uid = int(docker_cli.docker("exec", container, "id", "-u", image_user))
    assert uid != 0
    watchdog = psutil.Process(found["State"]["Pid"])  # the same process, as the host sees it
    tree = [watchdog, *watchdog.children(recursive=True)]
    assert any("index.py" in " ".join(p.cmdline()) for p in tree)
    assert {p.uids().real for p in tree} == {uid}  # of-watchdog and the function both run as the image's user
    mounts = {m["Destination"]: m for m in found["Mounts"]}
    assert mounts["/var/openfaas/secrets"]["RW"] is False
    assert found["HostConfig"]["Memory"] == 1024 ** 3 and found["HostConfig"]["NanoCpus"] == 10 ** 9


def test_loop_and_per_iteration_jobs_end_done_exactly_on_both_stores(deployed):
    outcomes = fault_matrix.run_matrix(deployed["runtime"], "none (containers)", faults.nothing, at_epoch=0)
    assert [(o.mode, o.store) for o in outcomes] == list(COMBOS)
    for outcome in outcomes:
        assert outcome.exact, outcome
    print("\n" + "\n".join(o.row() for o in outcomes))


def test_faasgd_logs_and_faas_cli_logs_read_the_containers_output(deployed):
    logs = deployed["faas_cli"]("logs", "emnist-train", "--since", "1h", "--tail=false", timeout=10)
    assert "Listening on port: 8080" in logs.stdout, logs.stdout[-2000:] + logs.stderr[-2000:]
    status = json.loads((deployed["runtime"].directory / "state.json").read_text())
    assert all(entry.get("container") and "pid" not in entry for entry in status["replicas"])

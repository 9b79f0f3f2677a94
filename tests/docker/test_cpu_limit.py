"""A replica's BLAS threads fit its CPU limit: in a container limited to 1 CPU (the stack's `limits: {cpu: "1"}`,
`--cpus 1` on this machine of 2 or more), the function's process runs one BLAS thread, as its log says once its
handler has loaded numpy (faasgd.cpu_limit's line, from threadpoolctl's threadpool_info); without the limit it runs
one per CPU, and a user's OPENBLAS_NUM_THREADS wins over the limit. What the thread count saves is measured, not
asserted here: bench/efficiency_container.py (a 784x100 product and a whole job, on CPU clocks)."""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from faasgd.local.services import docker_cli
from support.container_faults import train_containers

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(600)]
THREADS_LINE = re.compile(r"BLAS threads: (\d+) \((.*)\)")
START_S = 90  # a function container's start on a loaded 2-core machine: watchdog, index.py, numpy, the handler


def logs(container: str) -> str:
    """The container's output so far, stdout and stderr (index.py logs on stderr)."""
    return subprocess.run(["docker", "logs", container], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=30).stdout


def threads_said(container: str, timeout_s: float = START_S) -> tuple[int, str]:
    """(threads, why) of the function's "BLAS threads:" line, once the container has logged it."""
    deadline = time.monotonic() + timeout_s
    while not (found := THREADS_LINE.findall(logs(container))):
        assert time.monotonic() < deadline, f"no BLAS threads line within {timeout_s}s:\n{logs(container)[-3000:]}"
        time.sleep(0.5)
    count, why = found[-1]
    return int(count), why


def started(image: str, *flags: str) -> str:
    """A throwaway container of `image` run as its image runs it (of-watchdog, index.py), no network."""
    return docker_cli.run_detached(["--network", "none", "--label", "faasgd-docker-test=cpu-limit", *flags, image])


@pytest.fixture
def train_image(deployed):
    return next(image for image in deployed["images"] if "/emnist-train:" in image)


def test_a_deployed_replica_limited_to_one_cpu_runs_one_blas_thread(deployed):
    assert (os.cpu_count() or 1) >= 2, "the limit is only seen against a machine of more CPUs than it allows"
    for container in train_containers(deployed["runtime"]):
        assert docker_cli.inspect("container", container)["HostConfig"]["NanoCpus"] == 10 ** 9  # limits.cpu "1"
        count, why = threads_said(container)
        assert count == 1, why
        assert why.startswith("the CPU limit: quota 1 CPU") and re.search(r"; openblas 1\b", why), why


@pytest.mark.parametrize("flags, expected, because", [
    (("--cpus", "1"), 1, "the CPU limit: quota 1 CPU"),
    ((), os.cpu_count(), "the CPU limit: no quota"),
    (("--cpus", "1", "--env", "OPENBLAS_NUM_THREADS=2"), 2, "OPENBLAS_NUM_THREADS=2"),
    (("--cpus", "1", "--cpuset-cpus", "0"), 1, "the CPU limit: quota 1 CPU, affinity 1"),
], ids=["cpus-1", "no-limit", "users-variable", "one-cpu-of-affinity"])
def test_the_function_process_counts_its_threads_from_its_own_cgroup(train_image, flags, expected, because):
    container = started(train_image, *flags)
    try:
        count, why = threads_said(container)
    finally:
        docker_cli.docker("rm", "-f", container, check=False)
    assert (count, why.startswith(because)) == (expected, True), why

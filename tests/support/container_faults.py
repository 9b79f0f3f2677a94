"""The process backend's faults (faasgd.testing.faults) struck at containers, through Docker: `docker kill`,
`docker stop`, and scaling mid-job. Each takes the runtime and the status queries of the jobs it strikes
and returns a note, as fault_matrix.run_matrix expects."""

from __future__ import annotations

import time

from faasgd.local.services import docker_cli
from faasgd.testing.fault_matrix import Runtime, wait_until
from faasgd.testing.faults import CUT


def train_containers(runtime: Runtime) -> list[str]:
    """The runtime's running emnist-train containers (its label and the function's), by id."""
    return docker_cli.docker("ps", "-q", "--filter", f"label=faasgd.runtime={runtime.state['runtime_id']}",
                             "--filter", "label=faas_function=emnist-train").split()


def pid_of(container: str) -> int:
    return (docker_cli.inspect("container", container) or {}).get("State", {}).get("Pid", 0)


def docker_kill(runtime: Runtime, queries: list[dict]) -> str:
    """`docker kill` (SIGKILL) an emnist-train container until one kill cuts a call in flight; each is replaced."""
    for kills in range(1, 6):
        before, victim = runtime.log().count(CUT), train_containers(runtime)[0]
        pid = pid_of(victim)
        docker_cli.docker("kill", victim)
        try:
            wait_until(lambda: runtime.log().count(CUT) > before, 2, "no call was cut")
            return f"{kills} container(s) killed; the last cut a call"
        except TimeoutError:
            wait_until(lambda: pid not in runtime.replica_pids(), 10, "the killed container was not replaced")
    return "5 containers killed; none cut a call"


def docker_stop(runtime: Runtime, queries: list[dict]) -> str:
    """`docker stop` one emnist-train container: SIGTERM to of-watchdog (PID 1), which drains, then it exits."""
    victim = train_containers(runtime)[0]
    docker_cli.docker("stop", "-t", "30", victim, timeout=60)
    return f"stopped container {victim[:12]}"


def scale_up_and_down(runtime: Runtime, queries: list[dict]) -> str:
    """emnist-train scaled 2 -> 4 (the new replicas serve) -> 1 (three drain and go) while the jobs train."""
    gateway = runtime.gateway
    gateway.scale("emnist-train", 4)
    wait_until(lambda: gateway.function_status("emnist-train")["availableReplicas"] >= 4, 60, "not 4 replicas")
    gateway.scale("emnist-train", 1)
    wait_until(lambda: len(train_containers(runtime)) == 1, 90, "the scaled-down containers did not go")
    return "scaled 2 -> 4 -> 1"


def wait_available(runtime: Runtime, timeout_s: float = 120) -> None:
    """Until emnist-setup and emnist-train are deployed and every replica of theirs is available."""
    deadline = time.monotonic() + timeout_s
    while True:
        functions = runtime.gateway.request("GET", "/system/functions").json()
        if sorted(f["name"] for f in functions) == ["emnist-setup", "emnist-train"] and \
                all(f["availableReplicas"] >= f["replicas"] for f in functions):
            return
        assert time.monotonic() < deadline, f"functions not available after {timeout_s}s: {functions}"
        time.sleep(0.5)

"""One replica of a function as a Docker container, started as faas-netes would start its pod.

faas-netes (pkg/handlers/deploy.go, pkg/k8s) gives a function's pod: the image, port 8080, the
environment `fprocess` (from envProcess) plus the deployed envVars, the labels `faas_function` and
the deployed labels, limits and requests of memory and CPU, the secrets read-only at
/var/openfaas/secrets, an emptyDir at /tmp when the root file system is read-only, the image's own
user, and an HTTP probe of /_/health on port 8080. Here each of those becomes a `docker run` flag
(`run_argv`), on the runtime's network (faasgd.local.services.docker_site); a CPU limit is `--cpus`, the CFS quota the
kubelet sets for a pod's limit, which the image's index.py reads to size its BLAS pool (faasgd.cpu_limit: the
runtime sets no thread variable in a container). The one departure: in-cluster
Service addresses in the environment are rewritten to where the runtime serves them on that network
(faasgd.local.services.dns; the table is `Host.services`), and the Service names also resolve to the
network's gateway address (`--add-host`), since no cluster DNS runs here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from faasgd.errors import ConfigError
from faasgd.local import processes
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas.deployments import Deployment
from faasgd.local.replicas.logs import pump, write_line
from faasgd.local.replicas.pods import Host, readiness
from faasgd.local.replicas.quantities import cpu_cores, memory_bytes
from faasgd.local.services import dns, docker_cli

PORT = 8080  # of-watchdog's port in every function image (faas-netes' RuntimeHTTPPort)
SECRETS_MOUNT = "/var/openfaas/secrets"
HEALTH_PATH = "/_/health"
PROBE_TIMEOUT_S = 1.0  # faas-netes' probe timeoutSeconds
STOP_GRACE_S = 30  # Kubernetes' terminationGracePeriodSeconds
RUNTIME_LABEL = "faasgd.runtime"  # every container and network a runtime starts carries its id
REPLICA_LABEL = "faasgd.replica"


@dataclass(frozen=True)
class Network:
    """The Docker network a runtime's containers join, and what they need to know of it."""

    name: str
    gateway_ip: str  # the host's address on the network, where the runtime serves the stores and the gateway
    runtime_id: str
    bridge: str = ""  # its Linux interface (faasgd.local.services.docker_wall lets only it, and the host, reach gateway_ip)


def resource_flags(limits: dict[str, str], requests: dict[str, str]) -> list[str]:
    """Docker's flags for a pod's limits (hard) and requests (a reservation and a CPU share)."""
    flags = []
    if limits.get("memory"):
        flags += ["--memory", str(memory_bytes(limits["memory"], "limits.memory"))]
    if limits.get("cpu"):
        flags += ["--cpus", f"{cpu_cores(limits['cpu'], 'limits.cpu'):g}"]
    if requests.get("memory"):
        flags += ["--memory-reservation", str(memory_bytes(requests["memory"], "requests.memory"))]
    if requests.get("cpu"):  # Kubernetes turns a CPU request into cpu.shares the same way
        flags += ["--cpu-shares", str(max(2, int(cpu_cores(requests["cpu"], "requests.cpu") * 1024)))]
    return flags


def container_env(deployment: Deployment, table: dict[str, str]) -> dict[str, str]:
    """faas-netes' environment: fprocess (when deployed with one), then the envVars; Service addresses mapped."""
    spec = deployment.spec
    deployed = ({"fprocess": spec.env_process} if spec.env_process else {}) | spec.environment
    return dns.rewrite(deployed, table)


def run_argv(deployment: Deployment, name: str, network: Network, table: dict[str, str],
             secrets_dir: Path) -> list[str]:
    """The `docker run -d` arguments of one replica (its image last), as faas-netes' pod spec has it."""
    spec = deployment.spec
    argv = ["--name", container_name(network.runtime_id, name), "--hostname", name,
            "--network", network.name, "--restart", "no"]
    labels = {"faas_function": spec.name, **spec.labels, RUNTIME_LABEL: network.runtime_id, REPLICA_LABEL: name}
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    for key, value in sorted(container_env(deployment, table).items()):
        argv += ["--env", f"{key}={value}"]
    hosts = service_hosts(table)
    for host in sorted({h for s in dns.SERVICES for h in s.hostnames()}):
        argv += ["--add-host", f"{host}:{hosts.get(host, network.gateway_ip)}"]
    argv += ["--volume", f"{secrets_dir}:{SECRETS_MOUNT}:ro"]
    if spec.read_only_root_filesystem:
        argv += ["--read-only", "--tmpfs", "/tmp:rw,mode=1777"]
    return argv + resource_flags(spec.limits, spec.requests) + [spec.image]


def service_hosts(table: dict[str, str]) -> dict[str, str]:
    """Each Service host name of the table to the address that plays it (on emulated nodes a store's node)."""
    return {key.rpartition(":")[0]: value.rpartition(":")[0] for key, value in table.items()}


def container_name(runtime_id: str, replica: str) -> str:
    return f"faasgd-{runtime_id}-{replica}"


@dataclass(frozen=True)
class ContainerRef:
    """A container's identity in the state file; no pid, so `faasgd down` never signals it as a process."""

    container: str
    address: str  # ip:8080 on the runtime's network

    def to_json(self) -> dict:
        return {"container": self.container, "url": self.address}


@dataclass
class ContainerReplica:
    """One container serving a function (the Replica interface of faasgd.local.replicas.supervisor)."""

    function: str
    name: str
    container: str  # its id
    ip: str  # its address on the runtime's network
    process: ProcessRef | None  # its PID 1 (of-watchdog) as the host sees it: alive() asks the kernel, not the daemon
    log_path: Path
    root: Path  # its secrets folder's parent, removed when it stops
    logs: subprocess.Popen | None = None  # `docker logs -f`, copying the container's output to log_path
    generation: int = 1
    healthy: bool = False
    failures: int = 0  # probes failed in a row (pods.readiness)
    started_at: float = field(default_factory=time.time)
    port: int = PORT
    node: str = ""  # its emulated node (faasgd.local.nodes.docker_net), "" without nodes

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{PORT}"

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    @property
    def ref(self) -> ContainerRef:
        return ContainerRef(self.container, f"{self.ip}:{PORT}")

    def alive(self) -> bool:
        return self.process is not None and processes.alive(self.process)

    def check_health(self) -> bool:
        """faas-netes' readiness probe: GET /_/health on port 8080 answers 200 (failureThreshold: pods.readiness)."""
        if not self.alive():
            self.healthy = False
            return False
        try:
            answered = httpx.get(self.url + HEALTH_PATH, timeout=PROBE_TIMEOUT_S, trust_env=False).status_code == 200
        except httpx.HTTPError:
            answered = False
        self.healthy, self.failures = readiness(self.healthy, self.failures, answered)
        return self.healthy

    def function_pid(self) -> int | None:
        """None: a container runs its image's own processes, none forked by the runtime's zygote."""
        return None

    def stop(self, grace_s: int = STOP_GRACE_S) -> None:
        """`docker stop` (SIGTERM, then SIGKILL after the grace period), remove it and its folder."""
        if self.container:
            docker_cli.docker("stop", "-t", str(grace_s), self.container, timeout=grace_s + 30, check=False)
            docker_cli.docker("rm", "-f", "-v", self.container, check=False)
        if self.logs is not None:
            processes.stop(self.logs, 2.0)
        shutil.rmtree(self.root, ignore_errors=True)

    def stop_now(self) -> None:
        """`stop` without the drain, for an idle replica (`docker stop -t 0`: SIGKILL at once)."""
        self.stop(0)


def project_secrets(host: Host, names: tuple[str, ...], target: Path) -> list[str]:
    """The deployment's secrets copied to `target`, readable inside the container (Kubernetes' mode 0644)."""
    missing = host.secrets.project(names, target)
    target.chmod(0o755)
    for path in target.iterdir():
        path.chmod(0o644)
    return missing


def start_container(deployment: Deployment, name: str, host: Host, network: Network) -> ContainerReplica:
    """Start one replica of `deployment` as a container; its output copied into logs/<name>.log."""
    spec = deployment.spec
    root = host.directory / "replicas" / name
    (host.directory / "replicas").mkdir(mode=0o700, exist_ok=True)
    missing = project_secrets(host, spec.secrets, root / "secrets")
    log_path = host.directory / "logs" / f"{name}.log"
    write_line(log_path, f"faasgd: starting {name} as a container of {spec.image} on {network.name}")
    if missing:
        write_line(log_path, f"faasgd: secret(s) not found in {host.secrets.directory}, not mounted: "
                             f"{', '.join(missing)}")
    try:
        container = docker_cli.run_detached(run_argv(deployment, name, network, dict(host.services),
                                                     root / "secrets"))
    except (docker_cli.DockerError, ConfigError) as error:  # a dead replica: supervision retries, the log says why
        write_line(log_path, f"faasgd: {name} did not start: {error}")
        return ContainerReplica(spec.name, name, "", "", None, log_path, root, generation=deployment.generation,
                                node=host.node)
    found = docker_cli.inspect("container", container) or {}
    ip = found.get("NetworkSettings", {}).get("Networks", {}).get(network.name, {}).get("IPAddress", "")
    pid = found.get("State", {}).get("Pid") or 0
    replica = ContainerReplica(spec.name, name, container, ip, _process(pid), log_path, root,
                               generation=deployment.generation, node=host.node)
    replica.logs = follow_logs(container, log_path)
    return replica


def _process(pid: int) -> ProcessRef | None:
    """The container's PID 1 as the host sees it; None when it already exited."""
    try:
        return ProcessRef.of(pid) if pid > 0 else None
    except psutil.NoSuchProcess:
        return None


def follow_logs(container: str, log_path: Path) -> subprocess.Popen:
    """`docker logs -f` of the container, each line stamped into `log_path` (faasgd.local.replicas.logs.pump)."""
    popen = subprocess.Popen(["docker", "logs", "--follow", container], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    pump(popen.stdout, log_path)
    return popen

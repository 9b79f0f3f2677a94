"""One replica of a function as a process, as a pod would run it: its own loopback port, HOSTNAME,
environment (faasgd.local.replicas.environment), secrets folder, temp folder and timestamped log.

Under the real of-watchdog (Host.watchdog, faasgd.local.replicas.watchdog) the replica starts as the image starts,
`python -S bootstrap.py <fwatchdog>` in its build folder, in a network namespace of its own: the watchdog
serves the replica's port and forks `python index.py` on a second port (upstream_url); the replica is
healthy once the watchdog's GET /_/health answers 200 (index.py's lock file in the replica's TMPDIR), and a
stop gives the watchdog its healthcheck_interval to drain. Without one, the replica is `python index.py`
itself on the replica's port, healthy once it accepts connections. The watchdog's lines and the function's
go to the same log."""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import psutil

from faasgd.errors import ConfigError
from faasgd.local import processes
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas import environment, netns, watchdog, zygote
from faasgd.local.replicas.deployments import Deployment
from faasgd.local.replicas.logs import pump, write_line
from faasgd.local.replicas.netns import start_ticks as netns_start_ticks
from faasgd.local.replicas.watchdog import Watchdog
from faasgd.local.services.secrets import SecretStore
from faasgd.local.services.stores import bound_socket, free_port

STOP_TIMEOUT_S = 5.0
HEALTH_TIMEOUT_S = 0.5
# faas-netes' readiness probe has failureThreshold 3: a serving replica leaves the routing after three failed probes
# in a row, not one (a probe that times out on a loaded machine is not a replica that stopped serving). A dead one
# leaves at once, and a new one serves from its first answered probe.
FAILURE_THRESHOLD = 3


def readiness(healthy: bool, failures: int, answered: bool) -> tuple[bool, int]:
    """(healthy, failures in a row) after one probe that `answered` or not, from the replica's state before it."""
    if answered:
        return True, 0
    failures += 1
    return healthy and failures < FAILURE_THRESHOLD, failures


@dataclass(frozen=True)
class Host:
    """What every replica of one runtime shares: its folder, the secrets, the service table, the shell."""

    directory: Path  # logs/<replica>.log and replicas/<replica>/{secrets,tmp}
    secrets: SecretStore
    services: Mapping[str, str]  # in-cluster host:port -> local address (faasgd.local.services.dns)
    environ: Mapping[str, str]  # the shell's environment: only PATH, HOME and LANG are taken from it
    watchdog: Watchdog = Watchdog()  # replicas run under it when found, else as bare `python index.py`
    zygote: str | None = None  # under the watchdog: the socket of the zygote the function processes fork from
    usable_cpus: int = 1  # the runtime's (faasgd.cpu_limit): a process replica's BLAS threads stay within them
    node: str = ""  # the emulated node a replica started with this Host runs on (faasgd.local.nodes); "": none
    netns: str | None = None  # that node's network namespace, where the function process runs; None: the host's


@dataclass
class Replica:
    """One process serving a function."""

    function: str
    name: str  # e.g. emnist-train-2, also its HOSTNAME
    port: int
    popen: subprocess.Popen  # the child; stopping it through the Popen also reaps it
    ref: ProcessRef  # its identity, for the state file
    log_path: Path
    root: Path  # its own folder (secrets copies, temp files), removed when it stops
    generation: int = 1  # the deployment's rollout it belongs to
    healthy: bool = False
    started_at: float = field(default_factory=time.time)
    failures: int = 0  # probes failed in a row (FAILURE_THRESHOLD)
    watched: bool = False  # under of-watchdog: health is its GET /_/health
    grace_s: float = STOP_TIMEOUT_S  # from SIGTERM to SIGKILL
    node: str = ""  # its emulated node (faasgd.local.nodes), "" without nodes

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return processes.alive(self.popen)

    def check_health(self) -> bool:
        """Under the watchdog: its GET /_/health answers 200 (the lock index.py writes once it can serve).
        Bare: it accepts connections."""
        if not self.alive():
            self.healthy = False
            return False
        answered = watchdog_healthy(self.port) if self.watched else accepts(self.port)
        self.healthy, self.failures = readiness(self.healthy, self.failures, answered)
        return self.healthy

    def function_pid(self) -> int | None:
        """The pid of its function process when the zygote forked it (function_ref), else None."""
        function = function_ref(self.root)
        return None if function is None else function.pid

    def family(self) -> list[ProcessRef]:
        """What the replica runs beside its own process: its descendants and, forked by the runtime's zygote, its
        function process (function_ref)."""
        function = function_ref(self.root)
        return descendants(self.popen.pid) + ([function] if function is not None else [])

    def stop(self) -> None:
        """Stop the process (reaping it) and whatever it started (a watchdog's function), remove its folder;
        also for one already dead."""
        children = self.family()
        processes.stop(self.popen, self.grace_s)
        processes.stop_all(children, STOP_TIMEOUT_S)  # a watchdog killed mid-drain leaves its function
        shutil.rmtree(self.root, ignore_errors=True)

    def stop_now(self) -> None:
        """`stop` without the drain, for an idle replica: SIGKILL to it and what it started, reaped."""
        children = self.family()
        processes.kill(self.popen)
        processes.stop_all(children, term=False)
        shutil.rmtree(self.root, ignore_errors=True)


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def watchdog_healthy(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HEALTH_TIMEOUT_S)
    try:
        connection.request("GET", "/_/health")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def descendants(pid: int) -> list[ProcessRef]:
    """The processes under `pid` now (none once it is gone)."""
    try:
        return [ProcessRef(child.pid, child.create_time()) for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def function_ref(root: Path) -> ProcessRef | None:
    """The function process the zygote forked for the replica whose folder is `root` (netns.py `enter` wrote its
    pid and start there), while it runs; None under no zygote, before the fork or after its end (a pid taken again
    since has another start)."""
    try:
        pid, started = (root / zygote.PID_FILE).read_text().split()
        if not started or netns_start_ticks(int(pid)) != started:
            return None
        process = psutil.Process(int(pid))
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return ProcessRef(process.pid, process.create_time())
    except (OSError, ValueError, psutil.Error):
        return None


def function_pids(directory: Path) -> list[int]:
    """The function processes the zygote of the runtime at `directory` forked, running now, one per replica."""
    return [ref.pid for root in sorted((directory / "replicas").glob("*"))
            if (ref := function_ref(root)) is not None]


def function_process(directory: Path, name: str, pid: int) -> psutil.Process:
    """Replica `name`'s function process (`python index.py`'s, serving its calls) in the runtime at `directory`,
    `pid` the replica's: forked by the zygote (function_ref), else the replica itself or its descendant running
    `python index.py` (not `netns.py enter`, which only stands in for one)."""
    ref = function_ref(directory / "replicas" / name)
    if ref is not None:
        return psutil.Process(ref.pid)
    replica = psutil.Process(pid)
    return next(p for p in [replica, *replica.children(recursive=True)]
                if p.cmdline()[-1:] == ["index.py"] and p.cmdline()[1:2] != ["-S"])


def replica_threads(limits: Mapping[str, str], usable_cpus: int, log_path: Path) -> int:
    """environment.blas_threads; 1 for a limits.cpu that is no CPU quantity (the deploy checked its form only: a
    container of it would not start, a process runs), the log saying why."""
    try:
        return environment.blas_threads(limits, usable_cpus)
    except ConfigError as error:
        write_line(log_path, f"faasgd: {error}; the replica's BLAS runs 1 thread")
        return 1


def start_replica(deployment: Deployment, name: str, host: Host) -> Replica:
    """Start the replica in the deployment's build folder (under the watchdog when the host has one, else
    `python index.py`), its output stamped into logs/<name>.log."""
    spec, host_socket = deployment.spec, bound_socket() if host.watchdog.found else None
    port = host_socket.getsockname()[1] if host_socket is not None else free_port()
    root = host.directory / "replicas" / name
    secrets_dir, tmp = root / "secrets", root / "tmp"
    (host.directory / "replicas").mkdir(mode=0o700, exist_ok=True)
    missing = host.secrets.project(spec.secrets, secrets_dir)
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = host.directory / "logs" / f"{name}.log"
    deployed = environment.function_env(spec, host.services)
    blas = environment.blas_env({**deployment.code.image_env, **deployed},
                                replica_threads(spec.limits, host.usable_cpus, log_path))
    env = environment.container_env(environment.basics(host.environ, str(tmp), blas), deployment.code.image_env,
                                    deployed, environment.replica_env(port, name, str(secrets_dir)))
    argv, watched = [sys.executable, "index.py"], host.watchdog.found
    if watched:
        env.update(watchdog.replica_env(port, free_port(), host.netns or f"/proc/{os.getpid()}/ns/net"))
        if host.zygote:
            env.update({zygote.ENV: host.zygote, zygote.PID_FILE_ENV: str(root / zygote.PID_FILE)})
        argv = watchdog.command(host.watchdog, port)
        env[netns.HOST_FD_ENV] = str(host_socket.fileno())  # netns.py serve listens on it: bound, never lost
    write_line(log_path, f"faasgd: starting {name} on 127.0.0.1:{port}"
                         + (f" under of-watchdog {host.watchdog.version}" if watched else "")
                         + (f", its function on {host.node}" if host.node else ""))
    if missing:  # Kubernetes refuses such a deploy; locally the stores need no password, so it starts
        write_line(log_path, f"faasgd: secret(s) not found in {host.secrets.directory}, not mounted: "
                             f"{', '.join(missing)}")
    try:
        popen = subprocess.Popen(argv, cwd=deployment.code.build_dir, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 pass_fds=() if host_socket is None else (host_socket.fileno(),))
    finally:
        if host_socket is not None:
            host_socket.close()  # the replica's now
    pump(popen.stdout, log_path)
    return Replica(spec.name, name, port, popen, ProcessRef.of(popen.pid), log_path, root, deployment.generation,
                   watched=watched, grace_s=watchdog.stop_grace_s(env) if watched else STOP_TIMEOUT_S, node=host.node)

"""One replica of a function as a process, as a pod would run it: its own loopback port, HOSTNAME,
environment (faasgd.local.environment), secrets folder, temp folder and timestamped log."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from faasgd.local import environment, processes
from faasgd.local.deployments import Deployment
from faasgd.local.logs import pump, write_line
from faasgd.local.processes import ProcessRef
from faasgd.local.secrets import SecretStore
from faasgd.local.stores import free_port

STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Host:
    """What every replica of one runtime shares: its folder, the secrets, the service table, the shell."""

    directory: Path  # logs/<replica>.log and replicas/<replica>/{secrets,tmp}
    secrets: SecretStore
    services: Mapping[str, str]  # in-cluster host:port -> local address (faasgd.local.services)
    environ: Mapping[str, str]  # the shell's environment: only PATH, HOME and LANG are taken from it


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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return processes.alive(self.popen)

    def check_health(self) -> bool:
        """Healthy once it accepts connections (of-watchdog's readiness, locally)."""
        if not self.alive():
            self.healthy = False
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                self.healthy = True
        except OSError:
            self.healthy = False
        return self.healthy

    def stop(self) -> None:
        """Stop the process (reaping it) and remove its folder; also for one already dead."""
        processes.stop(self.popen, STOP_TIMEOUT_S)
        shutil.rmtree(self.root, ignore_errors=True)


def start_replica(deployment: Deployment, name: str, host: Host) -> Replica:
    """Start `python index.py` in the deployment's build folder, its output stamped into logs/<name>.log."""
    spec, port = deployment.spec, free_port()
    root = host.directory / "replicas" / name
    secrets_dir, tmp = root / "secrets", root / "tmp"
    (host.directory / "replicas").mkdir(mode=0o700, exist_ok=True)
    missing = host.secrets.project(spec.secrets, secrets_dir)
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = environment.container_env(environment.basics(host.environ, str(tmp)), deployment.code.image_env,
                                    environment.function_env(spec, host.services),
                                    environment.replica_env(port, name, str(secrets_dir)))
    log_path = host.directory / "logs" / f"{name}.log"
    write_line(log_path, f"faasgd: starting {name} on 127.0.0.1:{port}")
    if missing:  # Kubernetes refuses such a deploy; locally the stores need no password, so it starts
        write_line(log_path, f"faasgd: secret(s) not found in {host.secrets.directory}, not mounted: "
                             f"{', '.join(missing)}")
    popen = subprocess.Popen([sys.executable, "index.py"], cwd=deployment.code.build_dir, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    pump(popen.stdout, log_path)
    return Replica(spec.name, name, port, popen, ProcessRef.of(popen.pid), log_path, root, deployment.generation)

"""Function replicas as processes: started from their build folder, kept at the desired count.

The Supervisor is what Kubernetes and faas-netes are to a cluster: it starts `scale.min` replicas
of each function, serves the gateway's view of them (the Registry protocol of local/gateway.py),
scales on request, and replaces a replica that dies, as a Deployment would.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from faasgd.errors import FaasgdError
from faasgd.local import processes
from faasgd.local.processes import ProcessRef
from faasgd.local.stores import free_port
from faasgd.local.stack import CE_MAX_REPLICAS, FunctionSpec

RECONCILE_S = 0.3  # how often dead replicas are replaced and health re-checked
STOP_TIMEOUT_S = 5.0


@dataclass
class Replica:
    """One process serving a function, as a pod would: its own port, HOSTNAME and log file."""

    function: str
    name: str  # e.g. emnist-train-2, also its HOSTNAME
    port: int
    popen: subprocess.Popen  # the child; stopping it through the Popen also reaps it
    ref: ProcessRef  # its identity, for the state file
    log_path: Path
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
        processes.stop(self.popen, STOP_TIMEOUT_S)


class Supervisor:
    """Keeps each function at its desired replica count; implements the gateway's Registry.

    A replica's environment is the daemon's, then its spec's environment, then `env` (what the
    runtime adds for every replica, such as where secret files are), then its port and HOSTNAME.
    """

    def __init__(self, specs: dict[str, FunctionSpec], build_dirs: dict[str, Path], env: dict[str, str],
                 log_dir: Path, on_change: Callable[[], None] | None = None):
        self.specs, self.build_dirs, self.env, self.log_dir = specs, build_dirs, env, log_dir
        self.on_change = on_change
        self.desired = {name: spec.min_replicas for name, spec in specs.items()}
        self.replicas: dict[str, list[Replica]] = {name: [] for name in specs}
        self.restarts = {name: 0 for name in specs}
        self._counter = {name: 0 for name in specs}
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, ready_timeout_s: float = 60.0) -> None:
        """Start every function's replicas and return once all are healthy."""
        self.reconcile()
        deadline = time.monotonic() + ready_timeout_s
        while not all(self._available(name) >= self.desired[name] for name in self.specs):
            if time.monotonic() > deadline:
                raise FaasgdError(f"replicas not healthy after {ready_timeout_s:.0f}s; see {self.log_dir}")
            time.sleep(0.1)
            self.reconcile()
        self._thread = threading.Thread(target=self._loop, name="faasgd-supervisor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for replicas in self.replicas.values():
                for replica in replicas:
                    replica.stop()
                replicas.clear()

    def _loop(self) -> None:
        while not self._stopping.wait(RECONCILE_S):
            self.reconcile()

    def reconcile(self) -> None:
        """Replace dead replicas, start or stop replicas to reach the desired counts, re-check health."""
        changed = False
        with self._lock:
            if self._stopping.is_set():
                return
            for name, replicas in self.replicas.items():
                for dead in [r for r in replicas if not r.alive()]:
                    replicas.remove(dead)
                    self.restarts[name] += 1
                    changed = True
                while len(replicas) < self.desired[name]:
                    replicas.append(self._spawn(name))
                    changed = True
                while len(replicas) > self.desired[name]:
                    replicas.pop().stop()  # the newest goes first
                    changed = True
                for replica in replicas:
                    replica.check_health()
        if changed and self.on_change is not None:
            self.on_change()

    def _spawn(self, name: str) -> Replica:
        self._counter[name] += 1
        replica_name = f"{name}-{self._counter[name]}"
        port = free_port()
        env = {**os.environ, **self.specs[name].environment, **self.env,
               "upstream_url": f"http://127.0.0.1:{port}", "HOSTNAME": replica_name,
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        log_path = self.log_dir / f"{replica_name}.log"
        with open(log_path, "ab") as log:
            log.write(f"faasgd: starting {replica_name} on 127.0.0.1:{port}\n".encode())
            log.flush()
            popen = subprocess.Popen([sys.executable, "index.py"], cwd=self.build_dirs[name], env=env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        return Replica(name, replica_name, port, popen, ProcessRef.of(popen.pid), log_path)

    def _available(self, name: str) -> int:
        return sum(1 for r in self.replicas[name] if r.healthy)

    # -- the gateway's Registry ----------------------------------------------------------------
    def function_names(self) -> list[str]:
        return list(self.specs)

    def describe(self, name: str) -> dict | None:
        spec = self.specs.get(name)
        if spec is None:
            return None
        with self._lock:
            return {"name": name, "image": spec.image, "replicas": self.desired[name],
                    "availableReplicas": self._available(name), "labels": spec.labels,
                    "envProcess": "python index.py", "namespace": "openfaas-fn",
                    "restarts": self.restarts[name],
                    "pids": [r.pid for r in self.replicas[name]]}

    def replica_urls(self, name: str) -> list[str]:
        with self._lock:
            return [r.url for r in self.replicas.get(name, []) if r.healthy and r.alive()]

    def scale(self, name: str, replicas: int) -> int:
        spec = self.specs[name]
        if not 1 <= replicas <= spec.max_replicas:
            raise ValueError(
                f"replicas: must be in [1, {spec.max_replicas}] for {name} (com.openfaas.scale.max; "
                f"OpenFaaS Community Edition caps a function at {CE_MAX_REPLICAS}), got {replicas}")
        with self._lock:
            self.desired[name] = replicas
        self.reconcile()
        return replicas

    def total_replicas(self) -> int:
        with self._lock:
            return sum(self.desired.values())

    def processes(self) -> list[dict]:
        """Every replica process, for the state file (faasgd down stops them by pid)."""
        with self._lock:
            return [{"function": r.function, "name": r.name, **r.ref.to_json(), "port": r.port,
                     "log": str(r.log_path)} for rs in self.replicas.values() for r in rs]

"""The runtime's real Supervisor over replicas that are no processes, for unit tests of /system.

Each FakePod is a FakeReplica (an ASGI echo app the RoutingTransport reaches by host), healthy as
soon as it is checked and stopped by a flag; the stack is the repository's stack.yml, its build
folders never laid out (no replica runs). `system_gateway` serves the gateway in-process over it.
"""

from __future__ import annotations

import itertools
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from faasgd.local.processes import ProcessRef
from faasgd.local.replicas.deployments import Catalog, Code, Deployment
from faasgd.local.replicas.pods import Host
from faasgd.local.replicas.stack import load_stack
from faasgd.local.replicas.supervisor import Supervisor
from faasgd.local.services.secrets import SecretStore
from support.fake_replicas import FakeReplica
from support.local_gateway import gateway_in_process
from support.paths import ROOT

T0 = 1_700_000_000.0
LOGIN = ("admin", "s3cret-pw")
_PIDS = itertools.count(40_000)


class FakePod:
    """A replica without a process: what the Supervisor reads of one, and an echo app behind it."""

    def __init__(self, deployment: Deployment, name: str, host: Host):
        self.function, self.name, self.generation = deployment.spec.name, name, deployment.generation
        self.node = host.node  # the emulated node the Supervisor seated it on ("": none)
        self.deployment, self.app = deployment, FakeReplica(name)
        self.url, self.port, self.pid = self.app.url, 0, next(_PIDS)
        self.ref, self.log_path = ProcessRef(self.pid, T0), host.directory / "logs" / f"{name}.log"
        self.healthy = self.dead = self.stopped = False
        self.drained: bool | None = None  # how it was stopped: drained (stop) or killed at once (stop_now)

    def alive(self) -> bool:
        return not (self.dead or self.stopped)

    def check_health(self) -> bool:
        self.healthy = self.alive()
        return self.healthy

    def function_pid(self) -> int | None:
        return None  # no zygote forked it: the process (none here) is the replica's own

    def stop(self) -> None:
        self.stopped, self.drained = True, True

    def stop_now(self) -> None:
        self.stopped, self.drained = True, False


class FakePods:
    """The Supervisor's `spawn`: records every pod, and adds its app to the gateway's transport."""

    def __init__(self):
        self.made: list[FakePod] = []
        self.transport = None

    def __call__(self, deployment: Deployment, name: str, host: Host) -> FakePod:
        self.made.append(FakePod(deployment, name, host))
        if self.transport is not None:
            self.transport.add(self.made[-1].app)
        return self.made[-1]

    def running(self, function: str) -> list[FakePod]:
        return [p for p in self.made if p.function == function and p.alive()]

    def attach(self, transport) -> None:
        self.transport = transport
        for pod in self.made:
            transport.add(pod.app)


def stack_catalog(build_root: Path) -> Catalog:
    """The repository's stack functions as code (build folders named, not laid out)."""
    codes = [Code(replace(spec, env_process="python index.py"), build_root / name, {"mode": "http"})
             for name, spec in load_stack(ROOT / "stack.yml", env={}).items()]
    return Catalog(codes)


def fake_supervisor(directory: Path, pods: FakePods) -> Supervisor:
    (directory / "logs").mkdir(parents=True, exist_ok=True)
    catalog = stack_catalog(directory / "build")
    host = Host(directory, SecretStore(directory / "secrets"), {}, {})
    supervisor = Supervisor(catalog.stack_deployments(T0), catalog, host, spawn=pods, background=lambda work: work())
    supervisor.reconcile()
    return supervisor


@asynccontextmanager
async def system_gateway(directory: Path, **options):
    """(gateway, supervisor, pods): the stack deployed on fake pods, the gateway in-process, with
    secrets in directory/secrets and the login LOGIN unless options say otherwise."""
    pods = FakePods()
    supervisor = fake_supervisor(directory, pods)
    options = {"secrets_dir": str(directory / "secrets"), "basic_auth": LOGIN, **options}
    async with gateway_in_process(supervisor, **options) as gw:
        pods.attach(gw.transport)
        gw.client.auth = options["basic_auth"]
        yield gw, supervisor, pods

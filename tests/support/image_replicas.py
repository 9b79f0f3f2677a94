"""Function replicas run as their image runs them, without docker, behind the local gateway.

A replica is `python index.py` in build/<fn>/ under the Python of the image's venv (support.function_image),
with the environment a pod of it gets: the Dockerfile's ENV, then stack.yml's environment for the function
with the cluster's Service addresses pointed at local processes (faasgd.local.services.dns), then what a replica
sets itself (upstream_url, HOSTNAME, its secrets folder). Its process also logs every module it imports
(PYTHONPROFILEIMPORTTIME: the interpreter writes one line on stderr per module the first time it is loaded,
in any thread, lazily loaded ones included), so a test can ask what the process loaded.

`serve(python, build, functions, local, workdir)` starts the local gateway (its queue on a real nats-server)
and one replica of each function, and yields (gateway URL, replicas by name) once every one is ready.
"""

from __future__ import annotations

import contextlib
import pathlib
import re
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from faasgd.local.gateway import GatewayOptions, LocalGateway
from faasgd.local.queue.jetstream import JetStreamBroker
from faasgd.local.replicas.dockerfile import image_env
from faasgd.local.replicas.stack import load_stack
from faasgd.local.services import dns
from faasgd.local.services.broker import start_nats
from faasgd.local.services.stores import free_port
from support.fake_replicas import FakeRegistry
from support.paths import ROOT

IMPORTED = re.compile(r"^import time:\s+-?\d+\s+\|\s+-?\d+\s+\|\s+(\S+)\s*$", re.M)  # a module's first import


@dataclass
class Replica:
    name: str
    url: str
    process: subprocess.Popen
    log: pathlib.Path  # its stdout and stderr

    def wait_ready(self, timeout_s: float = 60) -> None:
        """Until index.py's readiness route answers 200 (the handler imported), as the watchdog asks it."""
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            assert self.process.poll() is None, f"{self.name} exited:\n{self.log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"{self.name} not ready within {timeout_s} s"
            time.sleep(0.1)

    def ready(self) -> bool:
        try:
            return httpx.get(self.url + "/_/ready", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def imported(self) -> set[str]:
        """Every module the process has loaded so far."""
        return set(IMPORTED.findall(self.log.read_text(errors="replace")))

    def terminate(self) -> None:
        """SIGTERM: index.py drains through healthcheck_interval, then exits."""
        if self.process.poll() is None:
            self.process.terminate()

    def wait_gone(self) -> None:
        """Until the process has exited; SIGKILL if it outlives its drain."""
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def pod_env(python: str, build: pathlib.Path, name: str, local: dict[str, str], home: pathlib.Path) -> dict:
    """What a pod of function `name` gets (no variable of this shell): basics, the image's ENV, the stack's."""
    basics = {"PATH": f"{pathlib.Path(python).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
              "LANG": "C.UTF-8", "TMPDIR": str(home)}
    stack = load_stack(ROOT / "stack.yml", {})[name].environment  # ${VAR:-} substituted as faas-cli does
    table = dns.addresses(local)
    return {**basics, **image_env(build / name / "Dockerfile", basics), **dns.rewrite(stack, table)}


def start_replica(python: str, build: pathlib.Path, name: str, local: dict[str, str],
                  workdir: pathlib.Path) -> Replica:
    """One replica of `name`, listening on a free loopback port (answers once ready: Replica.wait_ready)."""
    home, secrets = workdir / name, workdir / name / "secrets"  # no store-password: the test's Redis has none
    secrets.mkdir(parents=True)
    port = free_port()
    env = {**pod_env(python, build, name, local, home), "upstream_url": f"http://127.0.0.1:{port}",
           "HOSTNAME": f"{name}-0", "FAASGD_SECRETS_DIR": str(secrets),
           "healthcheck_interval": "1s",  # the drain after SIGTERM: short here
           "PYTHONPROFILEIMPORTTIME": "1"}
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([python, "index.py"], cwd=build / name, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    return Replica(name, f"http://127.0.0.1:{port}", process, log)


@contextlib.contextmanager
def serve(python: str, build: pathlib.Path, functions: tuple[str, ...], stores: dict[str, str],
          workdir: pathlib.Path):
    """(gateway URL, {name: Replica}): the gateway and one ready replica per function; all stopped at the end.

    `stores` maps "redis" and "memcached" to the store URL that plays each cluster Service here."""
    nats = start_nats(workdir / "jetstream")
    registry = FakeRegistry()  # a fixed directory: each function's one replica
    gateway = LocalGateway(registry, GatewayOptions(port=0), broker=JetStreamBroker(nats.url))
    replicas: dict[str, Replica] = {}
    try:
        gateway.start()
        local = {"gateway": urlsplit(gateway.url).netloc, **{k: urlsplit(u).netloc for k, u in stores.items()}}
        for name in functions:
            replicas[name] = start_replica(python, build, name, local, workdir)
            registry.functions[name] = [replicas[name]]
        for replica in replicas.values():
            replica.wait_ready()
        yield gateway.url, replicas
    finally:
        for replica in replicas.values():
            replica.terminate()  # all drain at once
        for replica in replicas.values():
            replica.wait_gone()
        gateway.stop()
        nats.stop()

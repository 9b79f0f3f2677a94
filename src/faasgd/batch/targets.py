"""Where a batch runs: the local runtime (`faasgd up`) or an OpenFaaS cluster (faas-cli, kubectl).

Both give a gateway (the functions resolve a run's `store` name to their own configured store), and put
emnist-train at one replica per worker (at most 5: Community Edition's cap) before each run,
waiting on readiness through the gateway, never on fixed sleeps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from faasgd.errors import ConfigError, FaasgdError
from faasgd.local import CE_MAX_REPLICAS, UpOptions, control, credentials, runtime_link_bytes
from faasgd.openfaas import TRAIN_FUNCTION, GatewayClient

READY_TIMEOUT_S = 300.0


def replicas_for(workers: int) -> int:
    return max(1, min(workers, CE_MAX_REPLICAS))


def cap_message(workers: int) -> str | None:
    if workers <= CE_MAX_REPLICAS:
        return None
    return (f"number_of_workers={workers}: OpenFaaS Community Edition runs at most {CE_MAX_REPLICAS} emnist-train "
            f"replicas, so {workers} workers share {CE_MAX_REPLICAS} replicas")


def check_stack(path: str) -> str:
    """The stack file a target deploys; checked before the batch makes its folder."""
    if not os.path.isfile(path):
        raise ConfigError("stack", f"no stack file {path!r} (run from the repository root or pass --stack)")
    return path


class Target:
    name = "target"
    gateway: GatewayClient

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def set_replicas(self, replicas: int) -> None: ...

    def link_bytes(self) -> dict | None:
        """Each emulated node's link bytes so far (faasgd.local.nodes.network); None: no such nodes."""
        return None

    def wait_ready(self, replicas: int, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until the gateway shows `replicas` of emnist-train, all available (FaasgdError at the deadline)."""
        self.gateway.wait_for_replicas(TRAIN_FUNCTION, replicas, timeout_s)


class LocalTarget(Target):
    """The local runtime: started if needed (and stopped at the end if this batch started it)."""

    name = "local"

    def __init__(self, stack: str = "stack.yml", directory: str = control.DEFAULT_DIR, port: int = 8080):
        self.stack, self.directory, self.port = check_stack(stack), directory, port
        self.state: dict = {}
        self.started = False

    def start(self) -> None:
        self.state, self.started = control.up(UpOptions(self.stack, self.port, self.directory))
        self.gateway = control.client(self.state, timeout_s=60)  # logs in to /system

    def stop(self) -> None:
        if self.started:
            control.down(self.directory)


    def set_replicas(self, replicas: int) -> None:
        self.gateway.scale(TRAIN_FUNCTION, replicas)
        self.wait_ready(replicas)

    def link_bytes(self) -> dict | None:
        return runtime_link_bytes(self.state)


SCALERS = ("kubectl", "gateway")


class ClusterTarget(Target):
    """An OpenFaaS cluster at $OPENFAAS_URL: `faas-cli deploy` once, then per configuration `kubectl scale` or,
    with scale_with="gateway", the gateway's POST /system/scale-function (what k8s/bench's in-cluster Job uses: no
    kubectl in its image and no RBAC on the function namespace; CE clamps both ways to [1, 5] alike)."""

    name = "cluster"

    def __init__(self, stack: str = "stack.yml", deploy: bool = True, namespace: str = "openfaas-fn",
                 scale_with: str = "kubectl"):
        if scale_with not in SCALERS:
            raise ConfigError("scale_with", f"expected one of {', '.join(SCALERS)}, got {scale_with!r}")
        url = os.environ.get("OPENFAAS_URL")
        if not url:
            raise ConfigError("OPENFAAS_URL", "set it to the cluster's gateway for --target cluster "
                                              "(e.g. http://127.0.0.1:31112)")
        self.gateway = GatewayClient(url, timeout_s=60, auth=credentials.for_gateway(url, control.read_state()))
        self.stack, self.deploy, self.namespace = check_stack(stack) if deploy else stack, deploy, namespace
        self.scale_with = scale_with

    def start(self) -> None:
        if self.deploy:
            self._run("faas-cli", "deploy", "-f", self.stack, "--gateway", self.gateway.url)


    def set_replicas(self, replicas: int) -> None:
        if self.scale_with == "gateway":
            self.gateway.scale(TRAIN_FUNCTION, replicas)
            self.wait_ready(replicas)
            return
        self._run("kubectl", "scale", "-n", self.namespace, "deployment/emnist-train", f"--replicas={replicas}")
        self.wait_ready(replicas)

    @staticmethod
    def _run(*argv: str) -> None:
        if shutil.which(argv[0]) is None:
            raise FaasgdError(f"{argv[0]}: not found on PATH (needed by --target cluster)")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise FaasgdError(f"{' '.join(argv)} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}")
        sys.stdout.flush()

"""A replica's environment, layered as a function container's is on Kubernetes with faas-netes.

Later layers win:
1. a container's basics: PATH, HOME and LANG from the shell that ran `faasgd up`, TMPDIR (the
   replica's own temp folder), and OMP/OPENBLAS/MKL_NUM_THREADS: the threads a pod of the function's
   limits would choose (`blas_threads`), unless the image or the function's environment names them
   (`blas_env`). A container gets none of these: its index.py reads its own cgroup (faasgd.cpu_limit);
2. the image's `ENV` (the template's Dockerfile, faasgd.local.replicas.dockerfile; `mode=http` included);
3. the function's environment as deployed: `fprocess` from the deployment's envProcess (faas-netes
   sets it), then its envVars (stack `environment` and `environment_file`, or a deploy's envVars)
   with in-cluster Service addresses pointed at the local processes (faasgd.local.services.dns);
4. what the runtime sets per replica: `upstream_url` (where index.py listens: the replica's own
   loopback port, where the image says 127.0.0.1:5000), HOSTNAME (the replica's name, as a pod's),
   and FAASGD_SECRETS_DIR (the replica's copy of its secrets, /var/openfaas/secrets on a cluster);
5. under the real of-watchdog (faasgd.local.replicas.watchdog.replica_env): the watchdog's `port` (the replica's
   port), `upstream_url` on a second port (where index.py listens behind it) and `fprocess` (the
   runtime's Python running index.py).
Nothing else of the shell reaches a replica.
"""

from __future__ import annotations

import math
from typing import Mapping

from faasgd import cpu_limit
from faasgd.local.replicas.quantities import cpu_cores
from faasgd.local.replicas.stack import FunctionSpec
from faasgd.local.services import dns

# One BLAS/OpenMP thread: the zygote's (its forked functions set their own: index.py, faasgd.cpu_limit), and a
# process replica's without a CPU limit. A worker steps on one core, and numpy started with more has OpenBLAS spin
# them up at import (~0.08 s of CPU a process). Also `train --direct`'s workers' (cli/forkserver.py).
THREADS = {name: "1" for name in cpu_limit.VARIABLES}
BASICS = ("PATH", "HOME", "LANG")  # what a container has without asking
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Docker's default PATH
SECRETS_ENV = "FAASGD_SECRETS_DIR"  # where the core reads secret files (faasgd.store)


def basics(environ: Mapping[str, str], tmpdir: str, blas: Mapping[str, str] = THREADS) -> dict[str, str]:
    """Layer 1: the shell's PATH, HOME and LANG, the replica's TMPDIR, the BLAS/OpenMP variables `blas`."""
    kept = {name: environ[name] for name in BASICS if environ.get(name)}
    return {"PATH": DEFAULT_PATH, **kept, "TMPDIR": tmpdir, **blas}


def blas_env(above: Mapping[str, str], threads: int) -> dict[str, str]:
    """Layer 1's OMP/OPENBLAS/MKL_NUM_THREADS, each `threads`; none when a layer `above` (the image's ENV, the
    function's environment) sets one of them: index.py then gives the others the user's count (faasgd.cpu_limit),
    as in a container."""
    if any(above.get(name, "").strip() for name in THREADS):
        return {}
    return {name: str(threads) for name in THREADS}


def blas_threads(limits: Mapping[str, str], usable: int) -> int:
    """A process replica's BLAS/OpenMP threads: those its function would choose in a pod of these `limits`
    (faasgd.cpu_limit: the floor of limits.cpu, at least 1) on a machine of `usable` CPUs (the runtime's own,
    cpu_limit.read_limit().usable). 1 without a CPU limit: the replicas share the machine, which no quota divides
    among them. Nothing enforces the limit on a process; its threads only follow it. ConfigError naming limits.cpu
    when it is no CPU quantity."""
    if not limits.get("cpu"):
        return 1
    return max(1, min(usable, math.floor(cpu_cores(limits["cpu"], "limits.cpu"))))


def function_env(spec: FunctionSpec, table: Mapping[str, str]) -> dict[str, str]:
    """Layer 3: fprocess and the deployed envVars, cluster Service addresses made local."""
    deployed = ({"fprocess": spec.env_process} if spec.env_process else {}) | spec.environment
    return dns.rewrite(deployed, table)


def replica_env(port: int, hostname: str, secrets_dir: str) -> dict[str, str]:
    """Layer 4: what the runtime sets for one replica."""
    return {"upstream_url": f"http://127.0.0.1:{port}", "HOSTNAME": hostname, SECRETS_ENV: secrets_dir}


def container_env(*layers: Mapping[str, str]) -> dict[str, str]:
    """The layers merged in order, later ones winning."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(layer)
    return merged

"""The Docker daemon, through the `docker` command: the few calls the container backend makes.

Every call runs `docker ...` with a timeout and raises DockerError (the command and docker's own
message) when it fails. Nothing here ever pulls from a registry other than one on loopback
(`pull` refuses any other; `run` always passes `--pull never`), so a machine whose daemon reaches
no registry never waits on one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Sequence

from faasgd.errors import FaasgdError

CALL_TIMEOUT_S = 60.0
PULL_TIMEOUT_S = 600.0
LOOPBACK_REGISTRIES = ("127.0.0.1:", "localhost:")


class DockerError(FaasgdError):
    """A docker command failed, or no daemon answers."""


def docker(*args: str, timeout: float = CALL_TIMEOUT_S, check: bool = True) -> str:
    """Run `docker ARGS...` and return its stdout; DockerError naming the command when it fails."""
    binary = shutil.which("docker")
    if binary is None:
        raise DockerError("docker: the docker command is not on PATH (Debian: apt-get install docker.io)")
    try:
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as error:
        raise DockerError(f"docker {' '.join(args[:2])}: no answer within {timeout:.0f}s") from error
    if check and done.returncode != 0:
        raise DockerError(f"docker {' '.join(args[:2])}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def daemon_version(timeout: float = 10.0) -> str:
    """The daemon's version; DockerError saying so when no daemon answers."""
    try:
        return docker("version", "--format", "{{.Server.Version}}", timeout=timeout).strip()
    except DockerError as error:
        raise DockerError(f"backend docker: no Docker daemon answers ({error}); start dockerd, or use "
                          f"the default backend (--backend process)") from error


def inspect(kind: str, name: str) -> dict | None:
    """`docker KIND inspect NAME` as a dict (kind: container, network, image), or None when there is none."""
    out = docker(kind, "inspect", name, check=False)
    try:
        found = json.loads(out or "[]")
    except ValueError:
        return None
    return found[0] if found else None


def listed(kind: str, label: str) -> list[str]:
    """Ids of the containers or networks (kind) carrying `label` (key=value); containers stopped or not."""
    flags = ["-a"] if kind == "container" else []
    return docker(kind, "ls", *flags, "-q", "--filter", f"label={label}").split()


def remove_labelled_containers(label: str) -> list[str]:
    """Remove (force, with their anonymous volumes) every container carrying `label`; their ids."""
    containers = listed("container", label)
    if containers:
        docker("rm", "-f", "-v", *containers, check=False)
    return containers


def remove_labelled(label: str) -> list[str]:
    """Remove every container, then every network, carrying `label`; returns what was removed."""
    removed = remove_labelled_containers(label)
    for network in listed("network", label):
        docker("network", "rm", network, check=False)
        removed.append(network)
    return removed


def is_loopback_registry(image: str) -> bool:
    """The image names a registry on this machine (127.0.0.1:PORT/... or localhost:PORT/...)."""
    return image.startswith(LOOPBACK_REGISTRIES)


def ensure_image(image: str) -> None:
    """Pull `image` when it lives in a registry on loopback (Kubernetes' imagePullPolicy Always, as
    faas-netes sets it), else require it locally; DockerError naming the image when neither works."""
    if is_loopback_registry(image):
        docker("pull", "--quiet", image, timeout=PULL_TIMEOUT_S)
        return
    if inspect("image", image) is None:
        raise DockerError(f"image: {image} is not on this machine and is not in a registry on loopback "
                          f"(the runtime pulls from 127.0.0.1:PORT only); build it, or push it to the "
                          f"runtime's registry (REGISTRY=127.0.0.1:PORT faas-cli up)")


def run_detached(argv: Sequence[str]) -> str:
    """`docker run -d --pull never ARGV...`; the new container's id."""
    return docker("run", "-d", "--pull", "never", *argv).strip()

"""Whether the Docker tests can run here: a daemon answering `docker info`, or else why not.

`make test` runs scripts/ensure-docker.sh first, which installs and starts what it can and, when Docker cannot
be had, writes its reason to build/docker-unavailable; a test that needs Docker skips with that reason:

    reason = unavailable_reason()
    if reason: pytest.skip(reason)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support.paths import ROOT

REASON_FILE = ROOT / "build" / "docker-unavailable"  # written by scripts/ensure-docker.sh
INFO_TIMEOUT_S = 20.0


def unavailable_reason(reason_file: Path = REASON_FILE) -> str | None:
    """None when a Docker daemon answers; otherwise one line saying why the Docker tests do not run."""
    docker = shutil.which("docker")
    if docker is None:
        return "Docker tests skipped: no docker client on PATH (make test installs Debian's docker.io)"
    try:
        done = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=INFO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"Docker tests skipped: `docker info` did not answer within {INFO_TIMEOUT_S:.0f}s"
    if done.returncode == 0:
        return None
    written = reason_file.read_text().strip() if reason_file.is_file() else ""
    said = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return "Docker tests skipped: " + (written or f"no Docker daemon answers `docker info` ({said})")


def images_missing(images) -> str | None:
    """Why a test needing a Docker daemon and these local images cannot run, in one line; None when it can."""
    from faasgd.local.services import docker_cli

    try:
        docker_cli.daemon_version(timeout=5)
    except docker_cli.DockerError as error:
        return f"no Docker daemon answers ({str(error).splitlines()[0][:120]})"
    absent = [image for image in images if docker_cli.inspect("image", image) is None]
    if absent:
        return f"{', '.join(absent)} not on this machine: run scripts/local-base-images.sh"
    return None

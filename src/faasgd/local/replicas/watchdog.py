"""Which way the process backend runs a replica: under the real of-watchdog, as a pod would, or bare.

    found = find("auto", os.environ, stack_path)   # "auto" | "off" | a path (`faasgd up --watchdog`)
    found.describe()    # "replicas under of-watchdog 0.11.3 (/work/shared/bin/fwatchdog)"

`auto` looks for `fwatchdog` in this order: FAASGD_WATCHDOG (a path, or `off`), `fwatchdog` on PATH, then
shared/bin/fwatchdog in the folder above the project (the stack file's folder). A replica under it starts as
the image starts, `python -S bootstrap.py <fwatchdog>` in its build folder, inside a network namespace of its
own (faasgd.local.replicas.netns: the watchdog's metrics port 8081 is fixed and one per namespace), which needs root.
Without a watchdog, or without root, a replica is `python index.py` on its own port, and the reason is said.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from faasgd.errors import ConfigError

ENV_VAR = "FAASGD_WATCHDOG"
CHOICES = ("auto", "off")
VERSION_TIMEOUT_S = 5.0
VERSION_LINE = re.compile(r"Version:\s*(\S+)")
LAUNCHER = Path(__file__).with_name("netns.py")  # run by path: replicas import another faasgd than the daemon
STOP_MARGIN_S = 5.0  # after healthcheck_interval: the function's exit and the watchdog's shutdown
MAX_GRACE_S = 15.0  # under `faasgd down`'s wait for the runtime (control.DOWN_TIMEOUT_S), which stops replicas


@dataclass(frozen=True)
class Watchdog:
    """The fwatchdog replicas run under (`path` and `version`), or None and `why` not."""

    path: str | None = None
    version: str | None = None
    why: str = "not looked for"

    @property
    def found(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        """The line `faasgd up` and `faasgd status` print."""
        if self.found:
            return f"replicas under of-watchdog {self.version} ({self.path})"
        return f"replicas as bare `python index.py` (no fwatchdog found: {self.why})"

    def to_json(self) -> dict:
        return {"path": self.path, "version": self.version, "why": self.why, "describe": self.describe()}

    @classmethod
    def from_json(cls, entry: object) -> Watchdog | None:
        """What a state file says, or None when it says nothing (a runtime from before this)."""
        if not isinstance(entry, dict):
            return None
        return cls(entry.get("path"), entry.get("version"), str(entry.get("why", "")))


def find(choice: str, environ: Mapping[str, str], stack_path: Path, can_unshare: bool | None = None) -> Watchdog:
    """The watchdog `choice` asks for: "off", a path (which must be one), or "auto" (see the module's doc).

    `can_unshare` is whether replicas can get network namespaces (default: running as root)."""
    if not isinstance(choice, str) or not choice:
        raise ConfigError("--watchdog", f"must be auto, off or the path of fwatchdog, got {choice!r}")
    if choice == "off":
        return Watchdog(why="--watchdog off")
    if choice != "auto":
        return _usable(_checked(choice, "--watchdog"), "--watchdog", can_unshare)
    given = environ.get(ENV_VAR, "")
    if given == "off":
        return Watchdog(why=f"{ENV_VAR}=off")
    if given:
        return _usable(_checked(given, ENV_VAR), ENV_VAR, can_unshare)
    candidates = [shutil.which("fwatchdog", path=environ.get("PATH", "")),
                  str(stack_path.resolve().parent.parent / "shared" / "bin" / "fwatchdog")]
    for path in candidates:
        if path and os.access(path, os.X_OK) and os.path.isfile(path):
            return _usable(path, "auto", can_unshare, strict=False)
    return Watchdog(why=f"{ENV_VAR} unset, none on PATH, none at {candidates[1]}")


def _checked(path: str, field: str) -> str:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ConfigError(field, f"{path!r} is not an executable file (give fwatchdog's path, or auto, or off)")
    return os.path.abspath(path)


def _usable(path: str, field: str, can_unshare: bool | None, strict: bool = True) -> Watchdog:
    """`path` with its version, if replicas can run under it here; else a ConfigError (`strict`) or bare."""
    can_unshare = os.geteuid() == 0 if can_unshare is None else can_unshare
    problem = None if can_unshare else "replicas under it need a network namespace each, so root"
    version = None
    if problem is None:
        version, problem = read_version(path)
    if problem is None:
        return Watchdog(path, version, "")
    if strict:
        raise ConfigError(field, f"{path}: {problem}")
    return Watchdog(why=f"{path} found, but {problem}")


def read_version(path: str) -> tuple[str | None, str | None]:
    """(version, None) from `fwatchdog --version` ("... Version: 0.11.3\tSHA: ..."), or (None, why not)."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"`{path} --version` failed: {exc}"
    match = VERSION_LINE.search(done.stdout + done.stderr)
    if done.returncode != 0 or match is None:
        return None, f"`{path} --version` printed no version (exit {done.returncode}), not of-watchdog?"
    return match.group(1), None


def replica_env(port: int, upstream_port: int, host_netns: str) -> dict[str, str]:
    """What the runtime sets for a replica under the watchdog, over the image's and the function's environment:
    the watchdog's port, where the function listens, and the function's command (the runtime's Python, back
    in the host's network namespace and killed with the watchdog: faasgd.local.replicas.netns `enter`; of-watchdog
    splits fprocess on spaces)."""
    enter = f"{sys.executable} -S {LAUNCHER} enter {host_netns}"
    return {"port": str(port), "upstream_url": f"http://127.0.0.1:{upstream_port}",
            "fprocess": f"{enter} {sys.executable} index.py"}


def command(watchdog: Watchdog, port: int) -> list[str]:
    """The replica's argv, run in its build folder: the namespace launcher, then the image's CMD."""
    return [sys.executable, "-S", str(LAUNCHER), "serve", str(port),
            sys.executable, "-S", "bootstrap.py", str(watchdog.path)]


def stop_grace_s(env: Mapping[str, str]) -> float:
    """How long a stopping watchdog gets before SIGKILL: it takes calls for healthcheck_interval after SIGTERM
    (default: write_timeout, as the watchdog's), then shuts down once the function has exited; at most
    MAX_GRACE_S, so the runtime's own stop ends before `faasgd down` stops waiting for it."""
    from faasgd.openfaas import go_seconds  # httpx with it: `faasgd up` finds the watchdog before it starts the runtime

    write_timeout = go_seconds(env.get("write_timeout"))
    return min(go_seconds(env.get("healthcheck_interval"), write_timeout) + STOP_MARGIN_S, MAX_GRACE_S)

"""The runtime's state file, <dir>/state.json: written by the daemon, read by `faasgd up`, `down` and the CLI;
beside it the runtime's folders (make_folders: an earlier runtime's logs set aside) and why a daemon ended before it
served (ENDED_FILE).

It holds every URL and each process the runtime started as pid + create time (faasgd.local.processes). A
module of its own, light to import, so `faasgd down` reads it without loading the daemon's modules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

STATE_FILE = "state.json"
# the temp folders of the servers the runtime starts (their configs and logs): <dir>/tmp, not /tmp, so those of a
# runtime killed before it could remove them are where `faasgd down` removes them, once it has stopped what that
# runtime left running (in /tmp they stayed for good: hundreds a day on a machine that runs the tests)
TEMP_FOLDER = "tmp"
# why the daemon ended before it served, one message (a FaasgdError's), for `faasgd up` to print in place of the
# log's tail (the traceback stays in logs/runtime.log); removed by `up` before it starts a daemon
ENDED_FILE = "logs/ended.txt"
RUNTIME_LOG = "runtime.log"  # logs/: the daemon's output, every start's
PREVIOUS_LOGS = "previous"  # logs/previous/: the replicas' logs of the runtime before this one (one runtime kept)
STATE_LOCK = threading.Lock()  # the supervisor's thread and the gateway's scale calls rewrite the file; the daemon
# also holds it while it changes the state it writes (a replica asking for S3), so a rewrite never sees it half-changed


def write_state(directory: Path, state: dict) -> None:
    """Atomically replace the state file."""
    tmp = directory / (STATE_FILE + ".tmp")
    with STATE_LOCK:
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, directory / STATE_FILE)


def load_state(directory: Path) -> dict | None:
    """The state file's content, or None when there is none (or it is not a JSON object)."""
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def write_ended(directory: Path, message: str) -> None:
    """Leave why the daemon ends for `faasgd up` (ENDED_FILE); on a disk with no room left, `up` shows the log."""
    try:
        (directory / ENDED_FILE).write_text(message)
    except OSError:
        pass


def read_ended(directory: Path) -> str | None:
    """Why the daemon ended, as it said it, or None."""
    try:
        return (directory / ENDED_FILE).read_text(errors="replace").strip() or None
    except OSError:
        return None


def make_folders(directory: Path) -> None:
    """The runtime's folders (the daemon's first step): logs (the earlier runtime's set aside) and build, and the
    owner's only: secrets (their values), replicas (each replica's copies of them; emptied of what a crashed
    runtime left), tmp (the servers')."""
    for folder in ("logs", "build"):
        (directory / folder).mkdir(parents=True, exist_ok=True)
    set_aside_logs(directory / "logs")
    shutil.rmtree(directory / "replicas", ignore_errors=True)
    for folder in ("secrets", "replicas", TEMP_FOLDER):
        (directory / folder).mkdir(mode=0o700, parents=True, exist_ok=True)


def set_aside_logs(logs: Path) -> None:
    """Move the logs an earlier runtime left (its replicas', its zygote's) into PREVIOUS_LOGS, replacing the ones
    there: a runtime's logs are its own replicas' (`faasgd logs`, /system/logs), where a replica named as an earlier
    one (emnist-setup-1) appended to its file and the replicas of earlier runtimes were printed as if they ran.
    runtime.log stays: `faasgd up` opened it for this daemon's output (each start's lines follow the last's)."""
    previous = logs / PREVIOUS_LOGS
    shutil.rmtree(previous, ignore_errors=True)
    previous.mkdir()
    for path in logs.glob("*.log"):
        if path.name != RUNTIME_LOG:
            os.replace(path, previous / path.name)


def source_sha() -> str:
    """The git commit faasgd runs from (/system/info's sha), or "unknown" outside a checkout."""
    try:
        done = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"

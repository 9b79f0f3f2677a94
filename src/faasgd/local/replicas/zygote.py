"""The runtime's function-process zygote: one process that has imported what the template's `index.py` and the
faasgd handlers import, from which each replica's function process is forked, its imports done.

Why: a replica's `python index.py` spent ~0.55 s of CPU importing (Flask 0.15, numpy 0.1, redis-py 0.1, faasgd's
config and functions 0.2) before it served, and `faasgd train` starts three at once on two cores: about a second
of its start. The zygote does those imports once, beside the daemon's own start, and a function process forks
from it in milliseconds.

The watchdog still starts the function as the image does (its fprocess, `netns.py enter`); there, when
FAASGD_ZYGOTE names this server's socket, `enter` hands the zygote what `exec` would have given the function
(argv, working folder, environment, stdin/stdout/stderr and the listening socket, fd 3) and stays as the
watchdog's child, standing in for the function: it passes on the signals it gets (the watchdog's SIGTERM starts
the function's drain), and ends with the function's exit status. The zygote forks the function with exactly those:
nothing of the zygote's environment, folder or descriptors remains; `index.py` runs as `__main__`. When `enter`
goes (the watchdog killed: its parent-death signal), the zygote kills the function, as the function itself died
with the watchdog before; when the zygote goes, its functions die with it (their parent-death signal). When the
zygote cannot be reached, `enter` execs the function as before: the zygote only makes a start faster.

What the preloaded modules read at import is the zygote's, not a replica's: none of them reads the environment
at import (faasgd.functions.replica_cache's renewal count is 0 in a forked process, which is never a renewed one:
a renewal execs a fresh interpreter), but numpy's BLAS, which starts with the zygote's one thread (its environment:
environment.basics); index.py's first step gives a forked function its replica's own count (faasgd.cpu_limit sets
the loaded pools through threadpoolctl). Python's `random` reseeds in a forked child; numpy's global generator is
not used by faasgd. The zygote runs no thread, so a fork copies no lock held by another one.

    python -m faasgd.local.replicas.zygote_server SOCKET     (the process itself; the daemon starts it: `start`)
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Mapping

from faasgd.local.replicas.zygote_server import AT_ONCE  # the flag its process reads (standard library at import)

MODULE = "faasgd.local.replicas.zygote_server"  # the zygote: `python -m MODULE SOCKET`
ENV = "FAASGD_ZYGOTE"  # the socket's path, in a replica's fprocess environment (netns.py `enter` reads it)
PID_FILE_ENV = "FAASGD_FUNCTION_PID_FILE"  # where `enter` writes the forked function's pid (pods.function_ref)
PID_FILE = "function.pid"  # in the replica's own folder
OFF = "FAASGD_NO_ZYGOTE"  # set to 1 in `faasgd up`'s environment: every function process is a fresh `python index.py`


def start(directory: Path, environ: Mapping[str, str], idle: bool = True) -> tuple[subprocess.Popen, str]:
    """Start the zygote of a runtime in `directory` (its socket: directory/zygote.sock, the owner's only); returns
    (its process, the socket's path). It listens at once and imports after: a replica may ask while it imports.
    Its interpreter starts with what a replica's does (environment.basics: PATH, HOME, LANG, one BLAS thread; no
    PYTHONPATH or other PYTHON* setting of the shell's), its folder the runtime's; it imports at SCHED_IDLE unless not
    `idle` (a zygote started again while replicas run: they may ask at once). Its errors go to
    directory/logs/zygote.log."""
    from faasgd.local.replicas.environment import basics

    path = str(directory / "zygote.sock")
    if os.path.exists(path):  # a crashed runtime's: wait_listening must see this one's
        os.unlink(path)
    with open(directory / "logs" / "zygote.log", "ab") as log:
        popen = subprocess.Popen([sys.executable, "-m", MODULE, path, *([] if idle else [AT_ONCE])],
                                 env=basics(environ, str(directory)),
                                 cwd=directory, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    return popen, path


def wait_listening(popen: subprocess.Popen, path: str, timeout_s: float = 10.0) -> bool:
    """Wait until the zygote listens (its socket exists: it binds first, ~30 ms after its start; the replicas start
    later still). False if it ended or did not within `timeout_s`: its replicas then start as fresh processes."""
    from faasgd.local.processes import backoff

    deadline = time.monotonic() + timeout_s
    for sleep_s in backoff():
        if os.path.exists(path):
            return True
        if popen.poll() is not None or time.monotonic() >= deadline:
            return False
        time.sleep(sleep_s)
    return False


def wanted(environ: Mapping[str, str]) -> bool:
    """Unless OFF is set (to anything but "" or "0"): a start timed as a container's, imports and all."""
    return environ.get(OFF, "") in ("", "0")


def hurry(popen: subprocess.Popen) -> None:
    """Give the zygote this process's scheduling policy back (it imports at SCHED_IDLE while the runtime starts):
    the replicas are about to ask it for their function processes. Quietly nothing when not allowed or gone."""
    try:
        os.sched_setscheduler(popen.pid, os.sched_getscheduler(0), os.sched_getparam(0))
    except OSError:
        pass


class Keeper:
    """The runtime's zygote, and another in its place when it ends (killed, crashed): without one, every replica
    started after would import for itself again, and the ended process would stay a zombie of the daemon until
    `faasgd down`. `watch` looks every `every_s`; an ended zygote is reaped at once and started again, at most
    MAX_RESTARTS times (one that keeps ending is left ended: the replicas exec their functions, as with none).
    `on_restart(popen)` is told of each new one (the daemon writes it into state.json)."""

    MAX_RESTARTS = 3

    def __init__(self, directory: Path, environ: Mapping[str, str], starter=None):
        self.directory, self.environ = directory, dict(environ)
        self.starter = starter or start
        self.popen, self.path = self.starter(directory, self.environ)
        self.restarts = 0
        self.on_restart = lambda popen: None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, every_s: float = 1.0) -> None:
        self._thread = threading.Thread(target=self._run, args=(every_s,), name="faasgd-zygote-keeper", daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            if self.popen.poll() is None:
                continue
            print(f"faasgd runtime: the zygote (pid {self.popen.pid}) exited with {self.popen.returncode}", flush=True)
            if self.restarts >= self.MAX_RESTARTS:
                print(f"faasgd runtime: not started again after {self.restarts} restarts: function processes start "
                      "as fresh `python index.py`", flush=True)
                return
            self.restarts += 1
            popen, _ = self.starter(self.directory, self.environ, idle=False)  # replicas may ask at once
            wait_listening(popen, self.path)
            self.popen = popen
            self.on_restart(popen)

    def stop(self, timeout_s: float) -> None:
        """Stop watching, then stop the zygote (its function processes die with it)."""
        from faasgd.local import processes

        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        processes.stop(self.popen, timeout_s)

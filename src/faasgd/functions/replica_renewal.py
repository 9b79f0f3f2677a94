"""A replica that loaded TensorFlow renews itself: once the job's worker has ended there, the process execs a
fresh interpreter in place, so the next job's calls find a replica holding only what a fresh one holds.

    renewal = Renewal(server, busy=lambda: replica.running > 0, before_exec=flush)  # index.py, waitress's server
    ask("...")           # replica_cache, when a worker ends in a process where TensorFlow is loaded
    renewal.start()      # index.py after each call, when asked(): renews at the first quiet moment

Why renew. Memory admission (functions/admission.py) bounds a worker by INTERPRETER_BYTES plus its job's parts,
plus TENSORFLOW_BYTES for `model: cnn` only. TensorFlow never leaves a process once imported (its native
libraries and allocator arenas stay mapped), so a warm replica that ran a cnn job would carry ~700 MiB into the
next MLP job, which admission sized without it (a fashion-mnist job measured 1,358 MB on such a replica against
598 MB on a fresh one, over the function's 1Gi). Counting TensorFlow for every job instead would refuse MLP jobs
that fit a fresh replica: setup cannot know which replica a call lands on. So a replica that loaded TensorFlow
is not reused as it is.

Why exec in place, not exit. of-watchdog (mode=http) forks the function once and waits on that process: an
exit with an error ends the watchdog too ("Forked function has terminated"), so Kubernetes restarts the
container (a restart counted, CrashLoopBackOff's delay when it repeats, the pod out of its endpoints meanwhile
and calls routed to it lost); an exit 0 leaves the watchdog up with no function behind it, answering every call
500; and removing the readiness lock (`/tmp/.lock`) only takes the pod out of the routing without replacing
the process. exec keeps what the watchdog, the kubelet and the local runtime (local/replicas/supervisor.py) see: the same
pid, alive, with its readiness lock. The listening socket goes to the new interpreter as fd 3 (LISTEN_FDS=1, as
bootstrap.py hands it over at start), so it never closes: calls that come meanwhile wait in its backlog until
the new interpreter has imported its handler, as at a cold start, and none is refused or lost. exec also starts
a new address space, so /proc's VmHWM starts again: the next job's peak is its own.

When. After `ask`, the server looks every POLL_S, on its own loop thread (where no request is read meanwhile),
whether it is quiet: no handler running, and every connection between two requests (none being read, queued
or answered). Then it execs (closing the connections already answered with `Connection: close`), and the
other open connections go along (their fds inherited, named in KEPT_FDS_ENV):
the new interpreter's server adopts them (`adopt`) and reads whatever request came on them meanwhile, so a
client's keep-alive connection (the watchdog's, the gateway's) is never closed under a request it is sending.
While calls keep it busy it waits; a call that arrives within one look (POLL_S) of the last call's end may
still be served by the old interpreter. A draining replica (SIGTERM) is not renewed: it is about to exit.
RENEWALS_ENV counts a process's renewals and RENEWED_AT_ENV says when the last one happened (time.time()).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)

POLL_S = 0.02  # how often a renewal looks whether the server is quiet
LISTEN_FD = 3  # where the new interpreter finds the listening socket (bootstrap.py's convention)
RENEWALS_ENV = "faasgd_renewals"
RENEWED_AT_ENV = "faasgd_renewed_at"
KEPT_FDS_ENV = "faasgd_kept_fds"  # the connections a renewal handed to the new interpreter: "5,7"

_asked = threading.Event()
_reasons: list[str] = []


def ask(reason: str) -> None:
    """Ask this process to renew itself once it is quiet (kept until it does; the first reason is logged)."""
    if not _asked.is_set():
        _reasons.append(reason)
        _asked.set()


def asked() -> bool:
    return _asked.is_set()


def tensorflow_loaded() -> bool:
    """Whether this process has imported TensorFlow (model/cnn_keras.py imports it at a cnn's first step)."""
    return "tensorflow" in sys.modules


def renewals(env: Mapping[str, str]) -> int:
    """How many times this replica's process has renewed itself (0 for one the platform started)."""
    text = env.get(RENEWALS_ENV, "0")
    return int(text) if text.isdigit() else 0


def between_requests(channel: Any) -> bool:
    """A waitress connection with no request being read, queued or answered: what comes next on it is a new
    request, still unread in its socket, which a new interpreter can read as well as this one."""
    return not (channel.requests or channel.request is not None or channel.total_outbufs_len)


def exec_fresh(listening_fd: int, kept: list[int], execv: Callable[[str, list[str]], None] = os.execv) -> None:
    """Replace this process with a fresh interpreter running the same program: the listening socket at LISTEN_FD,
    the connections `kept` (fds) inherited and named in KEPT_FDS_ENV."""
    if listening_fd != LISTEN_FD:
        kept = [os.dup(fd) if fd == LISTEN_FD else fd for fd in kept]  # fd 3 is the listening socket's now
        os.dup2(listening_fd, LISTEN_FD)  # inheritable: the new interpreter keeps it
    for fd in [LISTEN_FD, *kept]:
        os.set_inheritable(fd, True)
    os.environ["LISTEN_FDS"] = "1"
    os.environ[KEPT_FDS_ENV] = ",".join(map(str, kept))
    os.environ[RENEWALS_ENV] = str(renewals(os.environ) + 1)
    os.environ[RENEWED_AT_ENV] = f"{time.time():.6f}"
    execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def adopt(server: Any) -> int:
    """In a renewed interpreter: serve the connections the renewal handed over (KEPT_FDS_ENV) on `server`,
    a waitress server; how many. The variable is removed, so a later renewal starts from what is open then."""
    text = os.environ.pop(KEPT_FDS_ENV, "")
    fds = [int(fd) for fd in text.split(",") if fd.strip().isdigit()]
    for fd in fds:
        connection = socket.socket(fileno=fd)
        try:
            address = connection.getpeername()
        except OSError:  # the client closed it meanwhile
            connection.close()
            continue
        server.set_socket_options(connection)
        server.channel_class(server, connection, address, server.adj, map=server._map)
    return len(fds)


class Renewal:
    """Renews the process behind a waitress `server` at its first quiet moment after `start`.

    `busy()`: handlers still run (or the replica drains); `before_exec()`: flush logs and spans."""

    def __init__(self, server: Any, busy: Callable[[], bool], before_exec: Callable[[], None],
                 draining: Callable[[], bool] = lambda: False, poll_s: float = POLL_S,
                 execv: Callable[[str, list[str]], None] = os.execv):
        self.server, self.busy, self.before_exec, self.draining = server, busy, before_exec, draining
        self.poll_s, self.execv = poll_s, execv
        self.done = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Begin looking for a quiet moment (once; later calls do nothing)."""
        with self._lock:
            if self._thread is not None:
                return
            log.info("renewing this replica's process once no call runs: %s", "; ".join(_reasons) or "asked")
            self._thread = threading.Thread(target=self._poll, name="renewal", daemon=True)
            self._thread.start()

    def _poll(self) -> None:
        while not self.done.wait(self.poll_s):
            if self.draining():
                return
            self.server.trigger.pull_trigger(self.look)

    def look(self) -> None:
        """On the server's loop thread: when nothing runs and every connection is between requests, exec,
        handing the connections over."""
        if self.done.is_set() or self.draining() or self.busy():
            return
        channels = list(self.server.active_channels.values())
        if not all(between_requests(channel) for channel in channels):
            return
        self.done.set()
        closing = [channel for channel in channels if channel.will_close or channel.close_when_flushed]
        for channel in closing:  # answered with `Connection: close`: its client expects nothing more on it
            channel.handle_close()
        self.before_exec()
        kept = [channel.socket.fileno() for channel in channels if channel not in closing]
        try:
            exec_fresh(self.server.socket.fileno(), kept, self.execv)
        except OSError as exc:  # the program could not be started again: this interpreter goes on serving
            log.error("this replica could not renew itself (%s); it goes on serving as it is", exc)

"""A replica's life behind of-watchdog (mode=http): readiness, each call's deadline, draining after SIGTERM.

    replica = ReplicaLife(os.environ)
    times = replica.deadlines(request_headers)  # limit_s; answer_by and handler_by, time.monotonic() values
    outcome = replica.run(lambda: handler.handle(event, context), times.answer_by)

Readiness. The watchdog answers before the function listens (an empty 500 in between), so the socket comes
first (`listening_socket`: inherited from bootstrap.py as fd 3 when LISTEN_FDS=1, else bound here) and calls
wait in its backlog while the handler imports. The function owns the readiness lock (`<tmp>/.lock`: the
stack sets suppress_lock=true, and faas-netes probes `cat /tmp/.lock` or `/_/health`, which checks it):
written by `mark_ready` once the handler is imported, removed by `begin_drain`.

Deadlines. A call must answer within min(exec_timeout, write_timeout, X-Timeout) of its start (X-Timeout
only as a Go duration not above exec_timeout, as the watchdog takes it). `run` answers by ANSWER_MARGIN_S
before that (a JSON 504 then, where the watchdog's would be empty) while the handler goes on to its next
safe point; the handler is told a deadline HANDLER_MARGIN_S earlier still.

Draining. On SIGTERM (the watchdog forwards it at once) readiness goes and `draining` is set (faasgd hands
its training over at the next push); calls are still served through the watchdog's healthcheck_interval,
and once none runs the process exits 0 (`drain`; at the latest write_timeout later). A non-zero exit
would make the watchdog exit 1.

Durations are the watchdog's: an integer (seconds) or a Go duration, read by faasgd.openfaas.go_seconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from faasgd.openfaas import go_seconds

log = logging.getLogger(__name__)

ANSWER_MARGIN_S = 0.5  # a late call is answered this long before its limit, ahead of the watchdog
HANDLER_MARGIN_S = 1.0  # the handler is told to stop this long before the answer is due
DRAIN_POLL_S = 0.05  # how often `drain` looks whether it may exit


def call_limit(headers: Mapping[str, str], env: Mapping[str, str]) -> float:
    """Seconds a call may take: min(exec_timeout, write_timeout, X-Timeout if not above exec_timeout)."""
    exec_timeout, write_timeout = go_seconds(env.get("exec_timeout")), go_seconds(env.get("write_timeout"))
    limit = min(exec_timeout, write_timeout)
    asked = headers.get("X-Timeout")
    if asked and not asked.strip().isdigit():  # the watchdog takes only Go durations here
        wanted = go_seconds(asked, None)
        if wanted is not None and wanted <= exec_timeout:
            limit = min(limit, wanted)
    return limit


@dataclass(frozen=True)
class CallTimes:
    """A call's limit in seconds, and when (time.monotonic) it is answered and its handler should stop."""

    limit_s: float
    answer_by: float
    handler_by: float


@dataclass
class Outcome:
    """What a handler's run came to: its result, the exception it raised, or neither when it ran late."""

    result: Any = None
    error: BaseException | None = None
    late: bool = False


@dataclass
class ReplicaLife:
    """The state of one replica's process: ready, draining, calls running; `clock` is time.monotonic."""

    env: Mapping[str, str]
    lock_path: str = field(default_factory=lambda: os.path.join(tempfile.gettempdir(), ".lock"))
    clock: Callable[[], float] = time.monotonic
    ready: threading.Event = field(default_factory=threading.Event)
    draining: threading.Event = field(default_factory=threading.Event)
    running: int = 0
    sigterm_at: float | None = None
    traced: Callable[[Mapping[str, str]], Any] = lambda headers: contextlib.nullcontext()  # a call's span context
    end_tracing: Callable[[], None] = lambda: None  # exports the spans still batched
    _count_lock: threading.Lock = field(default_factory=threading.Lock)

    def deadlines(self, headers: Mapping[str, str]) -> CallTimes:
        """The times of a call starting now."""
        limit_s = call_limit(headers, self.env)
        answer_by = self.clock() + limit_s - ANSWER_MARGIN_S
        return CallTimes(limit_s, answer_by, answer_by - HANDLER_MARGIN_S)

    def left(self, until: float) -> float:
        return max(0.0, until - self.clock())

    def run(self, call: Callable[[], Any], answer_by: float) -> Outcome:
        """`call()` in a thread of its own, counted as running; `late` if it has not ended by `answer_by`."""
        outcome = Outcome()

        def counted() -> None:
            with self._count_lock:
                self.running += 1
            try:
                outcome.result = call()
            except BaseException as exc:  # handed back to the caller, which answers it
                outcome.error = exc
            finally:
                with self._count_lock:
                    self.running -= 1

        worker = threading.Thread(target=counted, name="handler", daemon=True)
        worker.start()
        worker.join(self.left(answer_by))
        return Outcome(late=True) if worker.is_alive() else outcome

    def start_tracing(self) -> None:
        """OpenTelemetry for this replica, set up once when the OTEL_* variables ask for an exporter
        (faasgd.tracing): each call then runs in the context its traceparent carries. A bad setting is
        logged and tracing stays off; the function still serves."""
        from faasgd import tracing
        from faasgd.tracing import setup

        try:
            setup.configure(self.env)
        except Exception as exc:  # a ConfigError naming the variable
            log.warning("tracing is off: %s", exc)
        self.traced, self.end_tracing = tracing.incoming, setup.shutdown

    def mark_ready(self) -> None:
        """The handler is imported: write the readiness lock and take calls."""
        with open(self.lock_path, "w"):
            pass
        self.ready.set()

    def readiness(self) -> str | None:
        """None when ready, else why not ("starting" or "draining")."""
        if self.draining.is_set():
            return "draining"
        return None if self.ready.is_set() else "starting"

    def begin_drain(self) -> None:
        """SIGTERM: readiness goes (the lock too) and every running handler sees `draining`."""
        self.draining.set()
        self.sigterm_at = self.clock()
        try:
            os.remove(self.lock_path)
        except OSError:
            pass

    def may_exit(self) -> bool:
        """After SIGTERM: the watchdog's healthcheck_interval has passed and no call runs, or write_timeout more."""
        if self.sigterm_at is None:
            return False
        write_timeout = go_seconds(self.env.get("write_timeout"))
        window = go_seconds(self.env.get("healthcheck_interval"), write_timeout)
        waited = self.clock() - self.sigterm_at
        return (waited >= window and self.running == 0) or waited >= window + write_timeout

    def drain(self, exit: Callable[[], None], sleep: Callable[[float], None] = time.sleep) -> None:
        """Wait until `may_exit`, then `exit()` (index.py's flushes the logs and ends the process with 0)."""
        while not self.may_exit():
            sleep(DRAIN_POLL_S)
        exit()


def listening_address(env: Mapping[str, str]) -> tuple[str, int]:
    """upstream_url's host and port, where the watchdog beside us calls."""
    upstream = urlsplit(env.get("upstream_url") or "http://127.0.0.1:5000")
    return upstream.hostname or "127.0.0.1", upstream.port or 5000


def listening_socket(env: Mapping[str, str]) -> socket.socket:
    """The socket bootstrap.py bound (fd 3, LISTEN_FDS=1), else one bound here to `listening_address`."""
    if env.get("LISTEN_FDS") == "1":
        return socket.socket(fileno=3)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(listening_address(env))
    sock.listen(1024)
    return sock

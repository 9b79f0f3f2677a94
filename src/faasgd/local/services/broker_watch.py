"""The runtime's watch over its broker: nats-server is restarted when it dies or its JetStream stops answering.

Every WATCH_S the watch asks nats-server a JetStream API question (broker.jetstream_serves). A server that
has exited (kill -9, a crash) is started again at once; one still running that has not answered for
STUCK_S (a full disk wedges nats-server 2.9: its port accepts, nothing answers) is stopped and started
again. The new server listens on the same port and keeps its files in the same directory, so the
streams and their unacked calls come back, and the gateway's client (which reconnects on its own) finds
it where it was. Its JetStream limit is sized to the disk again (broker.store_limit): while the disk
has too little room, no server runs, `problem` says why and the watch tries again every WATCH_S.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from faasgd.errors import FaasgdError
from faasgd.local.services.broker import jetstream_serves, start_nats
from faasgd.local.services.stores import ServerProcess

log = logging.getLogger(__name__)
WATCH_S = 1.0  # how often the broker is asked
ANSWER_S = 1.0  # how long one question may take
STUCK_S = 10.0  # a running server silent this long is restarted


class BrokerWatch:
    """Keeps `server` (nats-server with JetStream) answering; `on_restart(new)` is told of each new one."""

    def __init__(self, server: ServerProcess, on_restart: Callable[[ServerProcess], None] = lambda server: None,
                 watch_s: float = WATCH_S, stuck_s: float = STUCK_S, start: Callable[..., ServerProcess] = start_nats):
        self.server, self.on_restart, self.watch_s, self.stuck_s = server, on_restart, watch_s, stuck_s
        self.restarts = 0
        self.problem: str | None = None  # None while the broker answers
        self._first, self._start = server, start
        self._silent_since: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> BrokerWatch:
        self._thread = threading.Thread(target=self._run, name="faasgd-broker-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching; a server the watch started is stopped too (the first one is its starter's)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.server is not self._first:
            self.server.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.watch_s):
            try:
                self.check()
            except Exception:  # a bug must not end the watch
                log.exception("watching nats-server")

    def check(self) -> None:
        """One look: fine, silent (restarted once silent for stuck_s), or gone (restarted now)."""
        alive = self.server.alive()
        if alive and jetstream_serves(self.server.port, ANSWER_S):
            self.problem, self._silent_since = None, None
            return
        if alive:
            now = time.monotonic()
            self._silent_since = self._silent_since or now
            silent_s = now - self._silent_since
            self.problem = f"nats-server at {self.server.url} has not answered JetStream for {silent_s:.0f}s"
            if silent_s < self.stuck_s:
                return
            log.warning("%s: restarting it", self.problem)
            self.server.stop(timeout=1.0)
        self._restart()

    def _restart(self) -> None:
        old = self.server
        old.stop(timeout=1.0)  # gone already: this only tidies its files
        try:
            new = self._start(old.workdir, port=old.port)
        except FaasgdError as exc:  # the disk too full, the port taken: tried again at the next look
            if self.problem != str(exc):
                log.warning("nats-server (the async queue) is down and cannot be started again: %s", exc)
            self.problem = str(exc)
            return
        self.server, self.problem, self._silent_since = new, None, None
        self.restarts += 1
        log.warning("nats-server (the async queue) was down; started it again at %s (pid %d), same store %s",
                    new.url, new.pid, new.workdir)
        self.on_restart(new)

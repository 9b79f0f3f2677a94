"""Supervision beside the status reads: a read answers from the store at once and leaves the looking-after
to a thread of its own.

Supervision may re-invoke workers through the gateway, and the gateway's async route may be slow or down
(a dead queue answers only after its publish deadline, and re-invocations are retried). A status read
must not wait for that: `SupervisionBeside.look_after` starts one supervision of the job in a background
thread unless one is already running in this process, and returns what the last finished one did. The
next read reports the actions; the job's state in the store says the rest (a failed job reads failed).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Callable

log = logging.getLogger("faasgd.supervise")
REMEMBERED = 1000  # jobs whose last supervision is kept for the next read


class SupervisionBeside:
    """At most one supervision per job at a time, each in a daemon thread; the last outcome per job."""

    def __init__(self, spawn: Callable[[Callable[[], None]], object] | None = None):
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._last: OrderedDict[str, dict] = OrderedDict()
        self._spawn = spawn or _daemon_thread

    def look_after(self, job_id: str, supervise: Callable[[], list[str]]) -> dict | None:
        """Start `supervise` for `job_id` beside the caller (unless one runs); the last finished run's outcome:
        {"actions": [...], "at": seconds since the epoch, "error": str | None}, None before the first."""
        with self._lock:
            last = self._last.get(job_id)
            if job_id in self._running:
                return last
            self._running.add(job_id)
        self._spawn(lambda: self._run(job_id, supervise))
        return last

    def running(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._running

    def _run(self, job_id: str, supervise: Callable[[], list[str]]) -> None:
        actions, error = [], None
        try:
            actions = supervise()
        except Exception as exc:  # a store or gateway error: the next read tries again
            error = f"{type(exc).__name__}: {exc}"
            log.warning("job %s: supervision stopped: %s", job_id, error)
        with self._lock:
            self._running.discard(job_id)
            self._last[job_id] = {"actions": actions, "at": time.time(), "error": error}
            self._last.move_to_end(job_id)
            while len(self._last) > REMEMBERED:
                self._last.popitem(last=False)


def _daemon_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, name="faasgd-supervision", daemon=True)
    thread.start()
    return thread

"""The store's clocks: the server's own, and the job's timeline every stamp of a job is on.

Mixed into ParameterStore; a backend names its clock (`server_clock`), says how coarse it is
(`clock_resolution_s`) and reads it (`_server_time`, inside the store's `_errors()`).
"""

from __future__ import annotations

import time


class ClockMixin:
    """server_time, and job_time: the server's clock where it resolves a millisecond, else this host's."""

    clock_resolution_s = 0.0  # how far server_time may lag the true time (Memcached: whole seconds)
    server_clock = "this process's time.time (1 µs)"  # what server_time reads, named for the job's records

    def server_time(self) -> float:
        """The store server's clock, in seconds since the epoch (Redis: TIME, microseconds; Memcached: `stats`
        time, whole seconds; memory: this process). Durations use job_time, which never has whole seconds."""
        with self._errors():
            return float(self._server_time())

    @property
    def fine_clock(self) -> bool:
        """Whether the server's clock resolves a millisecond or better (Redis, memory; not Memcached)."""
        return self.clock_resolution_s <= 1e-3

    @property
    def job_clock(self) -> str:
        """The name of the clock job_time reads (what a job's records say its stamps are on)."""
        return self.server_clock if self.fine_clock else "host time.time (1 µs)"

    def job_time(self) -> float:
        """Now on the job's timeline: the server's clock where it resolves a millisecond (Redis TIME: one clock for
        every host of a cluster), else this host's wall clock (Memcached's whole seconds would make a 0.4 s job
        last 0 or 1 s). Calls read it once and move on by time.monotonic (worker/call_clock.py)."""
        return self.server_time() if self.fine_clock else time.time()

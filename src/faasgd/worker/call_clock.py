"""One call's clock: where the times, the billed duration and the CPU-seconds of a call's figures come from.

    clock = CallClock.begin(memory_mb=1024, cold=True)   # at the function's entry (time.monotonic)
    clock.anchor(store)                                 # once, at the call's first use of the timeline
    clock.now()                                         # a stamp on the job's timeline
    clock.elapsed()                                     # seconds since the entry: the billed duration so far
    clock.cpu.used()                                    # CPU-seconds since the entry, and their clock (call_cpu.py)

The job's timeline is the store's clock where it resolves a millisecond or better (Redis TIME: 1 µs; the
memory store: this process's) and otherwise this host's wall clock (time.time, 1 µs): Memcached's `stats`
time is whole seconds and is never used for a duration (ParameterStore.job_time). A call reads the timeline
once (`anchor`, one round trip on Redis) and moves on by time.monotonic from there: every duration within a
call is on the monotonic clock, a stamp costs no round trip, and a stamp taken before the anchor (the
call's entry) is placed on the timeline by the monotonic time between the two. The reading is paired with the
midpoint of its round trip, as NTP pairs a server's time: the server read its clock somewhere within the round
trip, so the call's stamps are right within half of it (`error_s`; a few µs on loopback, milliseconds on a
loaded host, where pairing the reading with the reply's arrival would place every stamp early by the delay).

Billing is as FaaS platforms bill: the call's duration from its entry (the handler) to its last record, at
the function's memory limit (`memory_mb`); `cold` when it is the first call its replica process serves.
Its CPU is counted from the same entry (`cpu`: the process's CPU clock, or the call's threads', call_cpu.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from faasgd.call_cpu import CallCpu

DEFAULT_MEMORY_MB = 1024.0  # billed when the function states no memory_limit: stack.yml's limits.memory (1Gi)


@dataclass
class CallClock:
    """The clock of one call (entry on `monotonic`; the timeline's reading at `anchored_at`, once anchored)."""

    memory_mb: float = DEFAULT_MEMORY_MB
    cold: bool = False
    monotonic: Callable[[], float] = time.monotonic
    entered: float = 0.0  # monotonic at the call's entry
    timeline: float | None = None  # the job's timeline at `anchored_at`
    anchored_at: float = 0.0  # monotonic when the timeline was read (the midpoint of the round trip)
    error_s: float = 0.0  # half the round trip of that reading: the stamps' uncertainty either way
    cpu: CallCpu = field(default_factory=CallCpu.begin)  # its CPU clocks, read at the entry

    @classmethod
    def begin(cls, memory_mb: float | None = None, cold: bool = False,
              monotonic: Callable[[], float] = time.monotonic, cpu: CallCpu | None = None) -> "CallClock":
        return cls(memory_mb=DEFAULT_MEMORY_MB if memory_mb is None else float(memory_mb), cold=cold,
                   monotonic=monotonic, entered=monotonic(), cpu=cpu or CallCpu.begin())

    def anchor(self, store: Any) -> "CallClock":
        """Read the job's timeline once (later calls change nothing)."""
        if self.timeline is None:
            sent = self.monotonic()
            reading = store.job_time()
            answered = self.monotonic()
            self.timeline, self.anchored_at, self.error_s = reading, (sent + answered) / 2, (answered - sent) / 2
        return self

    def anchor_local(self) -> "CallClock":
        """Anchor on this host's wall clock (when the store cannot be read: a call ending after it went away)."""
        if self.timeline is None:
            self.timeline, self.anchored_at = time.time(), self.monotonic()
        return self

    def now(self) -> float:
        """Now on the job's timeline (anchored on this host's wall clock if not anchored yet)."""
        self.anchor_local()
        return self.timeline + (self.monotonic() - self.anchored_at)

    def started_at(self) -> float:
        """The call's entry on the job's timeline."""
        self.anchor_local()
        return self.timeline - (self.anchored_at - self.entered)

    def elapsed(self) -> float:
        """Seconds since the call's entry (time.monotonic): its billed duration so far."""
        return max(0.0, self.monotonic() - self.entered)

    def billed(self) -> dict[str, Any]:
        """This call as an entry of the job's calls: its billed seconds so far, its memory, cold or warm."""
        seconds = self.elapsed()
        return {"billed_s": seconds, "memory_mb": self.memory_mb, "billed_gb_s": seconds * self.memory_mb / 1024.0,
                "cold": self.cold}

"""One call's CPU-seconds, counted from its entry to each record it writes, on the clock its process allows.

    cpu = CallCpu.begin()          # at the call's entry (CallClock.begin takes it)
    cpu.enter()                    # the call trains: in flight in this process until leave()
    cpu.watch(trainer.comms)     # a thread source the call started (its communication thread, its profile sampler)
    cpu.used()                     # (CPU-seconds since the entry, "process" | "threads"), at each record
    cpu.leave()                    # the call's end

Two clocks, chosen per call:
- process: this process's CLOCK_PROCESS_CPUTIME_ID (time.process_time, ns) from the call's entry, when the call
  has had the process to itself for its whole span: the usual case, one worker's call at a time in a replica, and
  each of `faasgd train --direct`'s worker processes. Every thread of the process counts: the training thread,
  the communication thread, the profile sampler, BLAS threads, the garbage collector, a memcached pool's fan-out
  threads, the replica's serving of the request.
- threads: when another call ran in the same process at any time during this one (a replica serving several
  workers' calls at once through waitress threads), the process's clock holds theirs too, so the call counts its
  own threads instead: the thread it entered on (time.thread_time from the entry) plus, for their whole life, the
  threads it started (`watch`: each source's thread_cpu_s, read on their pthread CPU clocks and kept when they
  end). Threads it did not start are missed: a BLAS pool (the local runtime runs one BLAS thread, so BLAS runs on
  the training thread), a memcached pool's fan-out, a node-local cache's refresher, the tracer's exporter.

Calls in flight: IN_FLIGHT counts the calls training in this process (enter .. leave) and numbers them as they
enter. A call has the process to itself while none was in flight when it entered and none has entered since; once
it has not, it stays on its threads' clock to its end. So the count of a call that began on the process clock and
then shared the process falls back to its threads' from the entry: a later record may say less than an earlier.
A record costs one clock read on the process clock, one per thread source more on the threads'.

The standard library only, beside the core's other small modules: a worker's call and record use it (worker/), and
so do the communication thread (downpour/comm.py), the profile sampler and the job's result (job/result.py: the
clocks' names), which stacking's functions load without any worker.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

PROCESS, THREADS, MIXED = "process", "threads", "mixed"  # the clocks a count is on; MIXED: calls counted on both


def thread_cpu_s(ident: int) -> float | None:
    """CPU-seconds the thread `ident` has used (its pthread CPU clock; None when it has ended or the platform cannot
    say)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (OSError, AttributeError, OverflowError):
        return None


class ThreadSource(Protocol):
    """Something a call started that runs threads of its own (the store thread, the profile sampler)."""

    def thread_cpu_s(self) -> float: ...  # CPU-seconds its threads have used in their whole life, ended ones too


class InFlight:
    """The calls training in this process now (`running`), and how many have entered so far (`entered`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.entered = 0

    def enter(self) -> tuple[bool, int]:
        """A call starts training: (whether no other call was training, its number)."""
        with self._lock:
            alone = self.running == 0
            self.running += 1
            self.entered += 1
            return alone, self.entered

    def leave(self) -> None:
        with self._lock:
            self.running -= 1


IN_FLIGHT = InFlight()  # this process's


@dataclass
class CallCpu:
    """The CPU clocks of one call, read at its entry (`process_at`, `thread_at` on thread `ident`)."""

    process: Callable[[], float] = time.process_time
    thread: Callable[[], float] = time.thread_time
    thread_of: Callable[[int], float | None] = thread_cpu_s  # a thread's CPU clock by its ident (None: ended)
    in_flight: InFlight = IN_FLIGHT
    ident: int = 0  # the thread the call entered on
    process_at: float = 0.0
    thread_at: float = 0.0
    sources: list[ThreadSource] = field(default_factory=list)
    alone: bool = True  # no other call has trained in this process during this one (so far)
    number: int | None = None  # its number in `in_flight` once it entered
    last_own_s: float = 0.0  # the entry thread's CPU since the entry, as last read

    @classmethod
    def begin(cls, process: Callable[[], float] = time.process_time, thread: Callable[[], float] = time.thread_time,
              thread_of: Callable[[int], float | None] = thread_cpu_s, in_flight: InFlight = IN_FLIGHT) -> "CallCpu":
        return cls(process, thread, thread_of, in_flight, threading.get_ident(), process(), thread())

    def enter(self) -> None:
        """The call starts training (once): in flight in this process until leave()."""
        if self.number is None:
            alone, self.number = self.in_flight.enter()
            self.alone = self.alone and alone

    def leave(self) -> None:
        if self.number is not None:
            self.in_flight.leave()
            self.number = None

    def watch(self, source: ThreadSource) -> None:
        """Count `source`'s threads as the call's (on the threads' clock)."""
        self.sources.append(source)

    def has_process(self) -> bool:
        """Whether the call has had the process to itself so far (before enter(): whether no call trains now)."""
        if self.number is None:
            return self.alone and self.in_flight.running == 0
        self.alone = self.alone and self.in_flight.entered == self.number
        return self.alone

    def used(self) -> tuple[float, str]:
        """(CPU-seconds from the entry to now, the clock they are on: PROCESS or THREADS)."""
        if self.has_process():
            return max(0.0, self.process() - self.process_at), PROCESS
        return self.own_s() + sum(source.thread_cpu_s() for source in self.sources), THREADS

    def own_s(self) -> float:
        """CPU-seconds of the thread the call entered on, since the entry (its last reading once it has ended)."""
        now = self.thread() if threading.get_ident() == self.ident else self.thread_of(self.ident)
        if now is not None:
            self.last_own_s = max(self.last_own_s, now - self.thread_at)
        return self.last_own_s


def joined(before: str, now: str) -> str:
    """The clock of a count of several calls: before's and now's ("" before any call)."""
    return now if before in ("", now) else MIXED

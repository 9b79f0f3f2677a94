"""A worker's resource sampler: a thread that samples CPU, memory and store traffic at a fixed rate.

What is measured, every 1/`hz` seconds (config `profile_hz`, default 10):
- cpu: the CPU time of the worker's own threads (its training thread and its communication thread,
  downpour/comm.py) over the period, in cores. Per thread (Linux `pthread_getcpuclockid`), not per process,
  because a replica runs several workers' calls at once (`waitress_threads`): process CPU would charge
  each worker with all of them. A BLAS thread pool is not counted: the local runtime runs replicas with
  one BLAS thread (local/replicas/environment.py); set OPENBLAS_NUM_THREADS=1 on a cluster too;
- rss: the process's resident memory (MB, /proc/self/statm). Memory cannot be told apart per thread:
  workers sharing a replica share it;
- tx / rx: bytes the worker's threads sent to and received from the stores over the period, counted at
  the store clients' sockets (store/meter.py), in bytes/s.
Each sample feeds the series' burst accumulators (bursts.py) and a bounded series for the plots
(`MAX_POINTS`, older samples averaged in pairs when full). `summary()` is the stats so far; the
worker's record carries them (`resources`), a separate record the series (profile/record.py).
The cost is a few clock reads and one small /proc read per sample (bench/profile_overhead.py).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Iterable

from faasgd.profile.bursts import SERIES, new_series
from faasgd.store import meter
from faasgd.call_cpu import thread_cpu_s

log = logging.getLogger("faasgd.worker")
MAX_POINTS = 600  # samples kept for the plot of one call; when full, pairs are averaged (the period doubles)


def page_mb() -> float:
    """The size of a memory page in MB (4096 bytes where the platform cannot say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") / 1e6
    except (ValueError, OSError, AttributeError):
        return 4096 / 1e6


PAGE_MB = page_mb()


def rss_mb() -> float:
    """This process's resident memory in MB (0.0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_MB
    except (OSError, IndexError, ValueError):
        return 0.0


class Sampler:
    """Samples the threads `threads()` names (idents; the list may grow) until stopped."""

    def __init__(self, hz: float, threads: Callable[[], Iterable[int]], clock: Callable[[], float] = time.monotonic,
                 cpu_s: Callable[[int], float | None] = thread_cpu_s, rss: Callable[[], float] = rss_mb) -> None:
        self.period = 1.0 / hz
        self.threads, self.clock, self.cpu_s, self.rss = threads, clock, cpu_s, rss
        self.bursts = new_series()
        self.last: dict[str, float] = {}  # the latest sample of each series
        self.points: dict[str, list[float]] = {"t": [], **{name: [] for name in SERIES}}
        self.step = 1  # samples per kept point
        self._pending: list[list[float]] = []
        self._cpu: dict[int, list[float]] = {}  # ident -> [baseline, last reading]
        self._bytes: dict[int, tuple[int, int]] = {}  # id of a thread's byte counter -> its baseline (sent, received)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ended_cpu_s: float | None = None  # the sampling thread's CPU-seconds, as it read them as it ended
        self.started = self.clock()
        self.wall_started = time.time()
        self._last = (self.started, *self._totals(first=True))

    # -- readings ---------------------------------------------------------------------------
    def _totals(self, first: bool = False) -> tuple[float, int, int]:
        """CPU seconds and (sent, received) bytes of the worker's threads since the sampler started."""
        cpu = sent = received = 0.0
        for ident in self.threads():
            reading = self.cpu_s(ident)
            known = self._cpu.get(ident)
            if known is None and reading is not None:  # a thread already running keeps what it used before
                known = self._cpu[ident] = [reading if first else 0.0, reading]
            if known is not None:
                if reading is not None:
                    known[1] = max(known[1], reading)
            counter = meter.counter_of(ident)
            if counter is not None:
                key = id(counter)
                if key not in self._bytes:  # a counter older than the sampler: only what it counts from now
                    old = first or counter.born < self.started
                    self._bytes[key] = (counter.sent, counter.received) if old else (0, 0)
        for baseline, last in self._cpu.values():  # ended threads keep their last reading
            cpu += last - baseline
        for ident in self.threads():
            counter = meter.counter_of(ident)
            if counter is not None and id(counter) in self._bytes:
                base = self._bytes[id(counter)]
                sent, received = sent + counter.sent - base[0], received + counter.received - base[1]
        return cpu, int(sent), int(received)

    def sample(self) -> None:
        """Take one sample now: the means over the time since the last one."""
        with self._lock:
            now = self.clock()
            cpu, sent, received = self._totals()
            last_t, last_cpu, last_sent, last_received = self._last
            dt = now - last_t
            if dt <= 0:
                return
            values = {"cpu": (cpu - last_cpu) / dt, "rss": self.rss(), "tx": (sent - last_sent) / dt,
                      "rx": (received - last_received) / dt}
            self._last = (now, cpu, sent, received)
            self.last = values
            for name in SERIES:
                self.bursts[name].add(values[name], dt)
            self._keep([now - self.started] + [values[name] for name in SERIES])

    def _keep(self, point: list[float]) -> None:
        self._pending.append(point)
        if len(self._pending) < self.step:
            return
        mean = [sum(column) / len(self._pending) for column in zip(*self._pending)]
        self._pending = []
        for key, value in zip(("t", *SERIES), mean):
            self.points[key].append(round(value, 4))
        if len(self.points["t"]) >= MAX_POINTS:  # halve: average neighbours
            for key, values in self.points.items():
                self.points[key] = [(a + b) / 2 for a, b in zip(values[::2], values[1::2])]
            self.step *= 2

    # -- results ----------------------------------------------------------------------------
    def summary(self) -> dict[str, dict]:
        """The stats of each series so far (bursts.STAT_KEYS), for the worker's record."""
        with self._lock:
            return {name: dict(self.bursts[name].stats) for name in SERIES}

    def series(self) -> dict:
        """The kept points: {"start": wall clock at the start, "t": [...], "cpu": [...], "rss", "tx", "rx"}."""
        with self._lock:
            return {"start": self.wall_started, **{k: list(v) for k, v in self.points.items()}}

    # -- the thread -------------------------------------------------------------------------
    def start(self, every: Callable[[], None] | None = None, every_s: float = 1.0) -> "Sampler":
        """Sample on a daemon thread until stop(); call `every` about every `every_s` seconds from it."""
        def loop() -> None:
            last = self.clock()
            try:
                while not self._stop.wait(self.period):
                    try:
                        self.sample()
                        if every is not None and self.clock() - last >= every_s:
                            last = self.clock()
                            every()
                    except Exception as error:  # a profile never stops a worker; it stops sampling, said once
                        log.warning("resource sampling stopped: %s: %s", type(error).__name__, error)
                        return
            finally:
                self._ended_cpu_s = time.thread_time()  # its clock cannot be read once it has ended

        self._thread = threading.Thread(target=loop, name="faasgd-profile", daemon=True)
        self._thread.start()
        return self

    def thread_cpu_s(self) -> float:
        """CPU-seconds the sampling thread has used in its whole life (0.0 before it starts), counted as the worker
        call's (call_cpu.py): read on its CPU clock while it runs, its own last reading once it has ended."""
        if self._ended_cpu_s is not None:
            return self._ended_cpu_s
        ident = self._thread.ident if self._thread is not None else None
        reading = thread_cpu_s(ident) if ident is not None else None
        return reading if reading is not None else (self._ended_cpu_s or 0.0)

    def stop(self) -> None:
        """Stop the thread and take a last sample (the time since the previous one)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

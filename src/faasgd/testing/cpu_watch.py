"""Where a machine's cores go during a job: one process's CPU (the store) and the whole machine's, over a window.

    with CpuWatch(store_pid) as watch:
        run_the_job()
    share = watch.cores(started_at, finished_at)  # CpuShare(store=0.41, busy=1.97, cores=2)

A thread samples, every `period_s`, the wall clock (time.time(), so windows can be taken from records other
processes wrote on this host) and the CPU seconds of the process (user + system, psutil; the kernel counts them
in ticks of 1/USER_HZ = 10 ms) and of the machine (every core's non-idle time, /proc/stat through psutil). A
share over a window is the difference of the samples that bound it, divided by the window's wall time: the
average number of cores in use. Windows shorter than a few periods are refused (the ticks would dominate).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import psutil

CLOCK = "time.time() wall window; CPU from /proc (psutil), 10 ms ticks"


@dataclass(frozen=True)
class CpuShare:
    """Average cores in use over a window: by the watched process, by the whole machine, and how many exist."""

    store: float
    busy: float
    cores: int
    window_s: float


def machine_busy_s() -> float:
    """Non-idle CPU seconds of every core since boot."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


class CpuWatch:
    """Samples one process's and the machine's CPU seconds on a thread until the context ends."""

    def __init__(self, pid: int, period_s: float = 0.05):
        self.process = psutil.Process(pid)
        self.period_s = period_s
        self.samples: list[tuple[float, float, float]] = []  # (wall, process CPU s, machine busy s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="faasgd-cpu-watch", daemon=True)

    def __enter__(self) -> "CpuWatch":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        """One sample; none once the process has gone (its last one stands)."""
        try:
            cpu = self.process.cpu_times()
        except psutil.NoSuchProcess:
            return
        self.samples.append((time.time(), cpu.user + cpu.system, machine_busy_s()))

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def cores(self, start: float, end: float) -> CpuShare:
        """The average cores in use between wall times `start` and `end` (the samples nearest inside them)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] < 4 * self.period_s:
            raise ValueError(f"window {end - start:.3f} s holds too few samples (period {self.period_s} s)")
        (t0, p0, b0), (t1, p1, b1) = inside[0], inside[-1]
        return CpuShare(store=(p1 - p0) / (t1 - t0), busy=(b1 - b0) / (t1 - t0), cores=os.cpu_count() or 1,
                        window_s=t1 - t0)

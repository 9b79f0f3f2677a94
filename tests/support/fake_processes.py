"""A fake process table for unit tests of faasgd.local.processes and its users: no real process is touched.

`FakeProcesses.install(monkeypatch)` replaces `psutil.Process` with a lookup in the table and the
clock faasgd.local.processes waits with by one that advances only when it is slept on.
"""

from __future__ import annotations

import signal

import psutil

from faasgd.local import processes


class FakeProcess:
    """What faasgd.local.processes asks of a psutil.Process, with the signals it received."""

    def __init__(self, table: FakeProcesses, pid: int, create_time: float, ignores_term: bool):
        self.table, self.pid, self._create_time, self.ignores_term = table, pid, create_time, ignores_term
        self.zombie = False
        self.signals: list[int] = []

    def create_time(self) -> float:
        return self._create_time

    def status(self) -> str:
        return psutil.STATUS_ZOMBIE if self.zombie else psutil.STATUS_SLEEPING

    def send_signal(self, sig: int) -> None:
        if self.table.processes.get(self.pid) is not self:
            raise psutil.NoSuchProcess(self.pid)
        self.signals.append(sig)
        if sig == signal.SIGKILL or not self.ignores_term:
            del self.table.processes[self.pid]


class FakeClock:
    """time.monotonic and time.sleep for processes' waits: sleeping advances it, nothing else does."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeProcesses:
    """pid -> FakeProcess; every process ever added stays in `everyone` to check its signals."""

    def __init__(self):
        self.processes: dict[int, FakeProcess] = {}
        self.everyone: list[FakeProcess] = []
        self.clock = FakeClock()

    def add(self, pid: int, create_time: float, ignores_term: bool = False) -> FakeProcess:
        process = FakeProcess(self, pid, create_time, ignores_term)
        self.processes[pid] = process
        self.everyone.append(process)
        return process

    def lookup(self, pid: int) -> FakeProcess:
        if pid not in self.processes:
            raise psutil.NoSuchProcess(pid)
        return self.processes[pid]

    def install(self, monkeypatch) -> FakeProcesses:
        monkeypatch.setattr(processes.psutil, "Process", self.lookup)
        monkeypatch.setattr(processes, "time", self.clock)
        return self

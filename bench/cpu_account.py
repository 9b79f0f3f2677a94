"""The kernel's count of the CPU a group of processes used: a cgroup around them, else their reaped rusage.

    with CpuAccount("faasgd-efficiency") as account:   # a cgroup of its own (root), removed at the end
        server = account.popen(["redis-server", ...])  # every process started here, and their children, is counted
        account.run(["faasgd", "train", ...])
        server.terminate(); server.wait()
    account.cpu_s()                                      # CPU-seconds of all of them, user + system

Clock: with a cgroup, cgroup v1 `cpuacct.usage` (ns; the scheduler's own runtime accounting of every task that
ever ran in the group, children included, wherever they were reaped) or cgroup v2 `cpu.stat` `usage_usec`
(µs; this file exists whether or not the cpu controller is enabled). Without one (not root, no cgroupfs): the
processes' rusage as reaped (`resource.getrusage(RUSAGE_CHILDREN)` before and after: user + system of every child
this process waited for, and of the children they waited for in turn), which misses a descendant nobody reaped
(a daemon's orphan); `clock` names which was used.

Why a cgroup: `faasgd train --direct`'s workers fork from a forkserver and the store server runs beside them;
a cgroup counts all of them, however they were started and whoever reaps them, with no sampling.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup/unified")
V2_ONLY = Path("/sys/fs/cgroup")
CLOCKS = {
    "cpuacct": "cgroup v1 cpuacct.usage (ns), every process in the group",
    "cgroup2": "cgroup v2 cpu.stat usage_usec (µs), every process in the group",
    "rusage": "getrusage(RUSAGE_CHILDREN) user + system of the reaped processes (no cgroup here)",
}


def children_cpu_s() -> float:
    """User + system CPU-seconds of every child this process has reaped so far (and of theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cgroup_root() -> tuple[str, Path] | None:
    """(kind, folder) of a writable cgroup hierarchy that counts CPU here, or None."""
    if (V1 / "cpuacct.usage").exists() and os.access(V1, os.W_OK):
        return "cpuacct", V1
    for root in (V2, V2_ONLY):
        if (root / "cgroup.procs").exists() and (root / "cpu.stat").exists() and os.access(root, os.W_OK):
            return "cgroup2", root
    return None


class CpuAccount:
    """CPU-seconds of the processes started through it (and their descendants), counted by the kernel."""

    def __init__(self, name: str, use_cgroup: bool = True):
        found = cgroup_root() if use_cgroup else None
        self.kind = found[0] if found else "rusage"
        self.folder: Path | None = None
        if found:
            self.folder = found[1] / f"{name}-{os.getpid()}-{time.monotonic_ns()}"
            self.folder.mkdir()
        self.clock = CLOCKS[self.kind]
        self._reaped_at_start = children_cpu_s()

    # -- processes --------------------------------------------------------------------------
    def _join(self) -> None:  # runs in the child between fork and exec
        if self.folder is not None:
            (self.folder / "cgroup.procs").write_text(str(os.getpid()))

    def popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start `argv` inside the account (its children too); reap it with wait() for the rusage clock."""
        return subprocess.Popen(argv, preexec_fn=self._join, **kwargs)

    def adopt(self, pid: int) -> None:
        """Count an already running process from now on (cgroups only: its past and, under rusage, itself are not)."""
        if self.folder is not None:
            (self.folder / "cgroup.procs").write_text(str(pid))

    def release(self, pid: int) -> None:
        """Stop counting a process from now on (cgroups only): it goes back to the hierarchy's root, so close() leaves
        it running; what it used while counted stays in the figure."""
        if self.folder is not None:
            (self.folder.parent / "cgroup.procs").write_text(str(pid))

    def run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run `argv` to its end inside the account; its CompletedProcess."""
        return subprocess.run(argv, preexec_fn=self._join, **kwargs)

    # -- the figure -------------------------------------------------------------------------
    def cpu_s(self) -> float:
        """CPU-seconds used so far by everything started here (rusage: only what has been reaped); after close(),
        the figure read as it closed."""
        if self.kind != "rusage" and self.folder is None:
            return self._final
        if self.kind == "cpuacct":
            return int((self.folder / "cpuacct.usage").read_text()) / 1e9
        if self.kind == "cgroup2":
            for line in (self.folder / "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
            raise RuntimeError(f"{self.folder}/cpu.stat has no usage_usec")
        return children_cpu_s() - self._reaped_at_start

    def pids(self) -> list[int]:
        """The processes in the group now (none without a cgroup)."""
        if self.folder is None:
            return []
        return [int(line) for line in (self.folder / "cgroup.procs").read_text().split()]

    def close(self) -> None:
        """Remove the cgroup; processes still in it are killed first (a group with members cannot be removed)."""
        if self.folder is None:
            return
        for _ in range(100):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        self._final = self.cpu_s()
        try:
            self.folder.rmdir()
        except OSError:
            pass
        self.folder = None

    def __enter__(self) -> "CpuAccount":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

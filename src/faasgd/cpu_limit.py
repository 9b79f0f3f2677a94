"""The CPUs a process may use, and its BLAS and OpenMP threads set to that many.

    threads = cpu_limit.limit_threads(os.environ)  # a function's first step, before numpy when it can be
    print(cpu_limit.report(threads))                # "BLAS threads: 1 (the CPU limit: quota 1 CPU, ...)"

Why: OpenBLAS starts a thread per CPU it sees, and a container limited to 1 CPU on a larger machine still sees them
all. Its threads then share one CPU's quota: each period the process runs out of it, every thread waits for the next
one, and a 784x100 product took ten times as long as with one thread (docs/explanation/local-runtime.md).

The usable CPUs (`read_limit(...).usable`): the floor of the cgroup's CPU quota (at least 1), capped by the CPU
affinity (os.sched_getaffinity, itself within os.cpu_count()); the affinity alone when there is no quota. The quota
is the smallest of this process's cgroup and those above it, up to the root of what is mounted:
- cgroup v2: `cpu.max`, "<quota> <period>" in µs, or "max <period>" for none;
- cgroup v1: `cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`.
The cgroup is the one /proc/self/cgroup names for the cpu controller (v1's when v1 holds it: a hybrid machine's v2
hierarchy then has none), found under its hierarchy's mount in /proc/self/mountinfo. Inside a container sharing the
host's cgroup namespace, /proc/self/cgroup says /docker/<id> while /sys/fs/cgroup/cpu is that very cgroup mounted:
the mount's root (/docker/<id>) is taken off the path. Missing or unreadable files count as no quota; so does a
cgroup path outside its mount's root.

The threads (`chosen_threads`): a user's OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MKL_NUM_THREADS wins, the first one
set in that order (OpenBLAS reads its own before OMP_NUM_THREADS), and the others unset take its number; with none
set, all three are the usable CPUs. The BLAS reads them when numpy loads it, so `limit_threads` writes them into the
environment first; where numpy is loaded already (a function process forked from the local runtime's zygote) it
sets the loaded libraries' pools too, through threadpoolctl. Standard library only at import: index.py imports it
before anything loads numpy.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, MutableMapping

from faasgd.errors import ConfigError

VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # the first set wins, in this order


@dataclass(frozen=True)
class CpuLimit:
    """What bounds the CPUs of a process: its cgroup's quota (None: none), its affinity, the machine's CPUs."""

    quota: float | None  # CPUs' worth of time a period, e.g. 1.0 for `docker run --cpus 1`
    affinity: int  # CPUs it may run on
    cpu_count: int  # CPUs of the machine (os.cpu_count)

    @property
    def usable(self) -> int:
        """floor(quota), at least 1, capped by the affinity; the affinity without a quota."""
        allowed = max(1, min(self.affinity, self.cpu_count))
        return allowed if self.quota is None else min(allowed, max(1, math.floor(self.quota)))

    def describe(self) -> str:
        quota = "no quota" if self.quota is None else f"quota {self.quota:g} CPU"
        return f"{quota}, affinity {self.affinity} of {self.cpu_count} CPUs"


@dataclass(frozen=True)
class Threads:
    """The thread count chosen for a process's BLAS and OpenMP pools, and why."""

    count: int
    source: str  # the variable a user set, or "the CPU limit"
    limit: CpuLimit


def read_limit(root: Path = Path("/"), affinity: int | None = None, cpu_count: int | None = None) -> CpuLimit:
    """This process's CPU limit; `root` stands for / (tests give a folder of fake /proc and /sys files)."""
    count = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    if affinity is None:
        affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else count
    return CpuLimit(cgroup_quota(Path(root)), affinity, count)


def cgroup_quota(root: Path) -> float | None:
    """The smallest CPU quota of this process's cgroup and those above it, in CPUs; None without one."""
    try:
        lines = (root / "proc/self/cgroup").read_text().splitlines()
        mounts = (root / "proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    found = cgroup_folders(lines, mounts, root)
    if found is None:
        return None
    version, folders = found
    quotas = [quota for folder in folders if (quota := read_quota(folder, version)) is not None]
    return min(quotas, default=None)


def cgroup_folders(lines: list[str], mounts: list[str], root: Path) -> tuple[int, list[Path]] | None:
    """(1 or 2, the process's cgroup folder and each above it up to its hierarchy's mount point) for the cpu
    controller; None when that hierarchy is not mounted or the cgroup lies outside the mount's root."""
    paths = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            hierarchy, controllers, path = parts
            if "cpu" in controllers.split(","):
                paths[1] = path
            elif hierarchy == "0" and controllers == "":
                paths[2] = path
    for version in (1, 2):
        mount = cgroup_mount(mounts, version) if version in paths else None
        if mount is None:
            continue
        mount_root, mount_point = mount
        relative = os.path.relpath(paths[version], mount_root)
        if relative == ".." or relative.startswith("../"):
            return None
        steps = [] if relative == "." else relative.split("/")
        top = root / mount_point.lstrip("/")
        return version, [top.joinpath(*steps[:depth]) for depth in range(len(steps), -1, -1)]
    return None


def cgroup_mount(mounts: list[str], version: int) -> tuple[str, str] | None:
    """(the mount's root in its hierarchy, its mount point) of the v1 hierarchy holding cpu, or of v2's."""
    for line in mounts:
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if len(fields) < dash + 4 or dash < 5:
            continue
        fstype, options = fields[dash + 1], fields[dash + 3].split(",")
        if (version == 1 and fstype == "cgroup" and "cpu" in options) or (version == 2 and fstype == "cgroup2"):
            return unescape(fields[3]), unescape(fields[4])
    return None


def unescape(field: str) -> str:
    """A mountinfo path with its octal escapes (\\040 for a space) undone."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def read_quota(folder: Path, version: int) -> float | None:
    """The quota one cgroup folder sets, in CPUs; None when it sets none or its files cannot be read."""
    try:
        if version == 2:
            return parse_cpu_max((folder / "cpu.max").read_text())
        return parse_cfs((folder / "cpu.cfs_quota_us").read_text(), (folder / "cpu.cfs_period_us").read_text())
    except OSError:
        return None


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2's cpu.max: "150000 100000" is 1.5 CPUs; "max 100000" none."""
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def parse_cfs(quota: str, period: str) -> float | None:
    """cgroup v1's cpu.cfs_quota_us over cpu.cfs_period_us; a quota of -1 is none."""
    return _ratio(quota.strip(), period.strip())


def _ratio(quota: str, period: str) -> float | None:
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def chosen_threads(environ: Mapping[str, str], limit: CpuLimit) -> Threads:
    """The first of VARIABLES the environment sets, else the usable CPUs; ConfigError naming a variable that is no
    positive count (OMP_NUM_THREADS may list nested levels, "4,2": its first is taken)."""
    for name in VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return Threads(explicit_count(name, value), name, limit)
    return Threads(limit.usable, "the CPU limit", limit)


def explicit_count(name: str, value: str) -> int:
    first = value.split(",")[0].strip() if name == "OMP_NUM_THREADS" else value
    if not first.isdigit() or int(first) < 1:
        raise ConfigError(name, f"a number of threads of at least 1, e.g. 1 or 4; got {value!r}")
    return int(first)


def thread_env(environ: Mapping[str, str], count: int) -> dict[str, str]:
    """The variables of VARIABLES the environment leaves unset, each set to `count`."""
    return {name: str(count) for name in VARIABLES if not environ.get(name, "").strip()}


def limit_threads(environ: MutableMapping[str, str] | None = None, limit: CpuLimit | None = None) -> Threads:
    """Choose the threads (`chosen_threads`), write them into `environ` (os.environ by default) for the BLAS to read
    when it loads, and set the pools of those loaded already (numpy imported: threadpoolctl)."""
    environ = os.environ if environ is None else environ
    threads = chosen_threads(environ, limit or read_limit())
    environ.update(thread_env(environ, threads.count))
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads.count)
    return threads


def loaded_pools() -> list[tuple[str, int]]:
    """(library, threads) of each BLAS and OpenMP library loaded now, as threadpoolctl finds them."""
    from threadpoolctl import threadpool_info

    return [(pool.get("internal_api", "?"), int(pool.get("num_threads", 0))) for pool in threadpool_info()]


def report(threads: Threads, pools: list[tuple[str, int]] | None = None) -> str:
    """One line for a replica's log: the BLAS threads the loaded libraries run (the most of any), and why."""
    pools = loaded_pools() if pools is None else pools
    why = f"{threads.source}: {threads.limit.describe()}" if threads.source == "the CPU limit" else \
        f"{threads.source}={threads.count}, set in the environment"
    if not pools:
        return f"BLAS threads: none loaded yet, {threads.count} when one is ({why})"
    each = ", ".join(f"{name} {count}" for name, count in pools)
    return f"BLAS threads: {max(count for _, count in pools)} ({why}; {each})"

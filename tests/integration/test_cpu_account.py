"""bench/cpu_account.py, the kernel's count the efficiency bench reads, against independent counts of known work: a
child that spins for a known CPU time (its own process clock) and a grandchild it starts, read by the cgroup and by
the rusage of the reaped processes; both within 5 % of each other and of the work done."""

from __future__ import annotations

import sys

import pytest

from support.bench_scripts import load_bench

pytestmark = pytest.mark.integration
cpu_account = load_bench("cpu_account")

# A child that spins until its own CPU clock says 0.6 s, starts a grandchild that spins 0.4 s and reaps it, and
# prints what its clocks say it and its child used (user + system, as the kernel's rusage does).
BUSY = """
import os, resource, subprocess, sys, time
def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
spin(0.6)
subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.4\\nwhile time.process_time() < end: pass"])
me, child = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(me.ru_utime + me.ru_stime + child.ru_utime + child.ru_stime)
"""


def busy(account) -> float:
    done = account.run([sys.executable, "-c", BUSY], capture_output=True, text=True, check=True)
    return float(done.stdout)


def test_the_cgroups_count_of_a_busy_child_and_its_child_is_the_kernels_rusage_within_5_percent():
    if cpu_account.cgroup_root() is None:
        pytest.skip("no writable cgroup hierarchy here (root and cgroupfs): the rusage clock is tested below")
    with cpu_account.CpuAccount("faasgd-test-account") as account:
        assert account.clock.startswith("cgroup")
        own = busy(account)
        counted = account.cpu_s()
    assert counted == pytest.approx(own, rel=0.05)  # the cgroup against the processes' own rusage
    assert counted >= 1.0  # at least the spinning: 0.6 + 0.4 s on the processes' own CPU clocks
    assert counted < 1.0 + 0.5  # plus two interpreters' start, not some other process's work
    assert account.cpu_s() == counted  # read once more after close: the figure as it closed


def test_without_a_cgroup_the_account_counts_reaped_processes():
    account = cpu_account.CpuAccount("faasgd-test-account", use_cgroup=False)
    assert account.kind == "rusage" and "RUSAGE_CHILDREN" in account.clock
    own = busy(account)
    assert account.cpu_s() == pytest.approx(own, rel=0.05)
    account.close()

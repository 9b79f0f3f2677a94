"""The cores CpuWatch reports for a process, against the process's own CPU clock over the same wall window."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from faasgd.testing.cpu_watch import CpuWatch

# a burning process against its own CPU clock: a neighbour on the 2 cores starved it below 0.2 of a core under
# `-n 2` on a loaded machine (make test: alone, after the rest)
pytestmark = pytest.mark.serial

BURN = """
import json, time
start_wall, start_cpu = time.time(), time.process_time()
while time.time() - start_wall < 0.8:
    sum(range(2000))
print(json.dumps([start_wall, time.time(), start_cpu, time.process_time()]))
"""


def test_a_burning_process_uses_what_its_own_clock_says():
    child = subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE, text=True)
    with CpuWatch(child.pid, period_s=0.02) as watch:
        out, _ = child.communicate(timeout=30)
        time.sleep(0.05)
    wall0, wall1, cpu0, cpu1 = json.loads(out)
    share = watch.cores(wall0, wall1)
    own = (cpu1 - cpu0) / (wall1 - wall0)  # the child's own CPU clock: an independent measurement
    assert own > 0.2  # it ran
    assert share.store == pytest.approx(own, abs=0.15)
    assert share.busy >= share.store - 0.05 and share.cores >= 1
    assert share.window_s <= wall1 - wall0 + 1e-6


def test_a_sleeping_process_uses_nothing_and_short_windows_are_refused():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    time.sleep(0.1)  # past its start-up
    with CpuWatch(child.pid, period_s=0.02) as watch:
        start = time.time()
        child.wait(timeout=30)
        end = time.time()
    assert watch.cores(start, end).store < 0.05
    with pytest.raises(ValueError, match="too few samples"):
        watch.cores(start, start + 0.03)


def test_the_machine_is_at_least_as_busy_as_two_burning_processes_say_they_were():
    children = [subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    with CpuWatch(children[0].pid, period_s=0.02) as watch:
        outs = [json.loads(child.communicate(timeout=30)[0]) for child in children]
        time.sleep(0.05)
    start, end = max(o[0] for o in outs), min(o[1] for o in outs)
    own = sum((o[3] - o[2]) / (o[1] - o[0]) for o in outs)  # each child's own CPU clock over its own wall time
    share = watch.cores(start, end)
    assert own > 0.4  # they ran
    assert own - 0.25 <= share.busy <= share.cores + 0.05, (own, share)  # anything else running only adds to busy

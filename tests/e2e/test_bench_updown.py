"""bench/updown.py's figures are whole-process wall times on time.perf_counter: one lies between the CPU time
the kernel charged the process (rusage of children, an independent clock; `faasgd down` runs one thread) and
a stopwatch around the bench's call. Measured in a fresh interpreter, whose only child is the timed command
(the test process's own children, reaped by other tests' threads, would count too)."""

import json
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.e2e

MEASURE = """
import importlib.util, json, resource, sys, time
spec = importlib.util.spec_from_file_location("updown", sys.argv[1])
updown = importlib.util.module_from_spec(spec)
spec.loader.exec_module(updown)
began = time.perf_counter()
seconds, done = updown.timed(updown.faasgd("down", "--dir", sys.argv[2]))
outer = time.perf_counter() - began
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "outer": outer, "cpu": usage.ru_utime + usage.ru_stime,
                  "stdout": done.stdout, "clock": updown.CLOCK}))
"""


def test_a_whole_command_figure_lies_between_its_cpu_time_and_an_outer_stopwatch(tmp_path):
    run = subprocess.run([sys.executable, "-c", MEASURE, str(ROOT / "bench" / "updown.py"), str(tmp_path / "none")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    assert figures["stdout"].startswith("stopped 0 process(es)")
    assert 0 < figures["cpu"] <= figures["seconds"] <= figures["outer"]
    assert "perf_counter" in figures["clock"]

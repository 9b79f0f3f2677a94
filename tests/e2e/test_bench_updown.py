"""bench/updown.py's figures are whole-process wall times on time.perf_counter: one lies between the CPU time
the kernel charged the process (rusage of children, an independent clock; `faasgd down` runs one thread) and
the test's own stopwatch around the bench's call."""

import importlib.util
import resource
import time

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.e2e


def bench():
    spec = importlib.util.spec_from_file_location("updown", ROOT / "bench" / "updown.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_a_whole_command_figure_lies_between_its_cpu_time_and_an_outer_stopwatch(tmp_path):
    updown = bench()
    cpu_before, began = children_cpu_s(), time.perf_counter()
    seconds, done = updown.timed(updown.faasgd("down", "--dir", str(tmp_path / "none")))
    outer = time.perf_counter() - began
    cpu = children_cpu_s() - cpu_before
    assert done.stdout.startswith("stopped 0 process(es)")
    assert 0 < cpu <= seconds <= outer
    assert "perf_counter" in updown.CLOCK

"""bench/store_scaling.py: the model's range behaves as the docs say (the busiest node decides, a second node
taking half the bytes doubles it, turns never beat overlap, the unshaped run caps it), and one real cell on a
shaped memcached node: the link slows training, the server counted at least the bytes the workers' own meter
saw, and the busiest link ran near its rate on the workers' clock; stopped by Ctrl-C or SIGTERM mid-cell, the
bench leaves no namespace, link or process behind."""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from faasgd.testing.shaped_net import names, pids_in, remove_all

pytestmark = pytest.mark.integration
BENCH = Path(__file__).resolve().parents[2] / "bench" / "store_scaling.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("store_scaling", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(samples: int, node_bytes: list[tuple[int, int]], samples_per_s: float = 1e9) -> dict:
    return {"samples": samples, "node_bytes": node_bytes, "samples_per_s": samples_per_s}


def test_a_second_node_taking_half_the_bytes_doubles_the_model(bench):
    one = bench.predict(run(1000, [(500_000, 250_000)]), 100)
    two = bench.predict(run(1000, [(250_000, 125_000), (250_000, 125_000)]), 100)
    assert two == pytest.approx((2 * one[0], 2 * one[1]))
    assert one[0] < one[1]  # taking turns (in + out) is slower than overlapping (the larger way)


def test_the_busiest_node_decides_and_the_unshaped_run_caps(bench):
    balanced = bench.predict(run(1000, [(300_000, 100_000), (300_000, 100_000)]), 100)
    skewed = bench.predict(run(1000, [(500_000, 100_000), (100_000, 100_000)]), 100)
    assert skewed[1] < balanced[1]
    assert bench.predict(run(1000, [(1000, 1000)], samples_per_s=5_000.0), 100) == (5_000.0, 5_000.0)
    assert bench.predict(run(1000, [(300_000, 100_000)]), 200)[1] == pytest.approx(2 * balanced[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="shaped nodes need root (network namespaces, veth links, tc "
                                               "qdiscs); CI runs as root")
@pytest.mark.serial
def test_one_shaped_cell_is_slowed_by_its_link_and_counted_by_the_server(bench):
    args = argparse.Namespace(workers=[1], period=10, rate_mbit=20.0, samples=12000, epochs=1,
                              dataset="fashion-mnist", prefix="fsgd-scm", subnet=203)
    rows = bench.measure("memcached", 1, args, lambda line: None)
    assert len(rows) == 1 and "skipped" not in rows[0]
    shaped, unshaped = rows[0]["shaped"], rows[0]["unshaped"]
    assert shaped["samples_per_s"] < unshaped["samples_per_s"] / 2
    read, written = shaped["node_bytes"][0]
    assert read >= shaped["push_bytes"] and written >= shaped["fetch_bytes"]
    print(f"shaped {shaped['samples_per_s']:,.0f} samples/s, unshaped {unshaped['samples_per_s']:,.0f}, "
          f"link use {rows[0]['link_use']:.2f}, server bytes {read:,}/{written:,}, "
          f"client {shaped['push_bytes']:,}/{shaped['fetch_bytes']:,}")
    assert 0.5 < rows[0]["link_use"] < 1.5


def ctrl_c_heard() -> None:
    """SIGINT as a terminal's ctrl-c finds it: a suite started in the background (`make test &`, a CI step) has it
    ignored, the bench would inherit that, and Python raises no KeyboardInterrupt where SIGINT is ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(os.geteuid() != 0, reason="shaped nodes need root (network namespaces, veth links, tc "
                                               "qdiscs); CI runs as root")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_bench_stopped_mid_cell_removes_its_nodes(sig):
    prefix = "fsgd-sci"
    bench = subprocess.Popen([sys.executable, str(BENCH), "--stores", "memcached", "--workers", "1", "--nodes", "1",
                              "--samples", "60000", "--epochs", "50", "--rate-mbit", "10", "--prefix", prefix,
                              "--subnet", "204", "--out", "/nonexistent"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=ctrl_c_heard)
    try:
        assert "unshaped, then" in bench.stdout.readline()  # the first cell has begun: nodes and server up
        spaces = names(prefix)[0]
        pids = [pid for space in spaces for pid in pids_in(space)]
        assert spaces == [f"{prefix}-1"] and pids
        deadline = time.monotonic() + 30
        while len(children := psutil.Process(bench.pid).children(recursive=True)) <= len(pids):  # + the workers
            assert time.monotonic() < deadline, "no worker process started within 30 s"
            time.sleep(0.1)
        pids += [child.pid for child in children]
        bench.send_signal(sig)
        bench.wait(30)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    try:
        assert bench.returncode != 0
        assert names(prefix) == ([], [])
        # the forkserver the workers forked from (cli/forkserver.py) ends by itself once the bench has: the end of
        # its pipe to the bench closes; its children, the workers, the bench stopped before it ended
        _, alive = psutil.wait_procs([psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)], timeout=5)
        left = [p for p in alive if p.status() != "zombie"]
        assert not left, [(p.pid, p.ppid(), p.cmdline()[:6]) for p in left]
    finally:
        remove_all(prefix)

"""Stopping real processes: SIGTERM honoured, SIGKILL after the timeout, stale pids left alone, store servers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from faasgd.local import processes
from faasgd.local.lifecycle import control
from faasgd.local.lifecycle.daemon import STATE_FILE
from faasgd.local.processes import ProcessRef
from faasgd.local.services.stores import start_memcached, start_redis

pytestmark = pytest.mark.integration
IGNORES_TERM = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ready', flush=True); time.sleep(60)")


@pytest.fixture
def children():
    """Children a test starts; any still running at the end are killed and reaped."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str]) -> subprocess.Popen:
        popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        started.append(popen)
        return popen

    yield start
    for popen in started:
        popen.kill()
        popen.wait(5)


def stubborn(start) -> subprocess.Popen:
    popen = start([sys.executable, "-c", IGNORES_TERM])
    assert popen.stdout.readline() == b"ready\n"  # its SIGTERM handler is in place
    return popen


def test_stop_by_ref_ends_a_child_that_honours_sigterm(children):
    child = children(["sleep", "60"])
    ref = ProcessRef.of(child.pid)
    assert processes.alive(ref)
    began = time.monotonic()
    assert processes.stop(ref, timeout=10) is True
    assert time.monotonic() - began < 5  # it did not wait for the timeout: SIGTERM was enough
    assert not processes.alive(ref)  # an unreaped child (a zombie) counts as dead
    assert child.wait(5) == -signal.SIGTERM
    assert processes.stop(ref) is False


def test_stop_by_ref_kills_a_child_that_ignores_sigterm(children):
    child = stubborn(children)
    assert processes.stop(ProcessRef.of(child.pid), timeout=0.5) is True
    assert child.wait(5) == -signal.SIGKILL


def test_stop_by_popen_kills_after_the_timeout_and_reaps(children):
    child = stubborn(children)
    assert processes.stop(child, timeout=0.5) is True
    assert child.returncode == -signal.SIGKILL  # reaped by stop itself
    assert not processes.alive(child) and processes.stop(child) is False
    polite = children(["sleep", "60"])
    assert processes.stop(polite, timeout=10) is True and polite.returncode == -signal.SIGTERM


def test_down_never_signals_a_process_that_reuses_a_listed_pid(children, tmp_path):
    stranger, ours = children(["sleep", "60"]), children(["sleep", "60"])
    stale = {"pid": stranger.pid, "create_time": ProcessRef.of(stranger.pid).create_time - 3600}
    (tmp_path / STATE_FILE).write_text(json.dumps({
        **stale, "gateway_url": "http://127.0.0.1:1",
        "stores": {"redis": {"url": "redis://127.0.0.1:1/0", **stale},
                   "memcached": {"url": "memcached://127.0.0.1:2", "pid": stranger.pid}},  # no create time
        "replicas": [{"name": "emnist-train-1", **stale},
                     {"name": "emnist-train-2", **ProcessRef.of(ours.pid).to_json()}],
    }))
    assert control.read_state(tmp_path) is None  # the listed daemon pid is someone else's now
    assert control.down(tmp_path) == [ours.pid]
    assert stranger.poll() is None, "down signalled a process it did not start"
    assert ours.wait(5) == -signal.SIGTERM
    assert not (tmp_path / STATE_FILE).exists()


@pytest.mark.parametrize("start", [start_redis, start_memcached], ids=["redis", "memcached"])
def test_store_server_starts_with_its_identity_and_stops(start):
    server = start()
    try:
        assert server.ref == ProcessRef.of(server.pid) and processes.alive(server.ref)
        assert server.alive()
    finally:
        server.stop()
    assert not server.alive() and not processes.alive(server.ref)
    assert server.popen.returncode is not None  # reaped
    server.stop()  # idempotent


def test_the_stores_are_killed_at_once_and_the_broker_terminated(tmp_path):
    """memcached and redis keep nothing past their exit and act on SIGTERM only at their next clock tick
    (memcached's once a second): they are killed; nats-server keeps JetStream files and gets SIGTERM."""
    from faasgd.local.services.broker import start_nats

    redis, memcached, nats = start_redis(), start_memcached(), start_nats(tmp_path / "jetstream")
    time.sleep(1.2)  # past memcached's first clock ticks, where a SIGTERM would wait for the next one
    took = {}
    for server in (memcached, redis, nats):
        began = time.monotonic()
        server.stop()
        took[server.name] = time.monotonic() - began
    assert memcached.popen.returncode == redis.popen.returncode == -signal.SIGKILL
    assert took["memcached"] < 0.5 and took["redis"] < 0.5
    assert nats.popen.returncode >= 0  # it exited by itself, on SIGTERM

"""A real job on each store group `faasgd up` starts for a stack naming them (stack.yml's opt-in line,
faasgd.testing.stacks.with_store_groups): the Redis Cluster (`store: cluster`) and the
memcached pool (`store: pool`). Two workers reach 0.85 on Fashion-MNIST through the gateway, and every master or
server of the group holds some of the job's keys (the chunks spread over all of them)."""

import json
import socket
import subprocess
import sys

import pytest

from faasgd.local.services.stores import free_port
from faasgd.testing import stacks
from support.paths import ROOT

pytestmark = pytest.mark.e2e


def faasgd(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def ask(url: str, request: bytes) -> bytes:
    host, port = url.split("://")[-1].split("/")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        return sock.recv(4096)


def keys_held(name: str, url: str) -> int:
    """How many keys one member holds: a Redis node's DBSIZE, a memcached server's curr_items."""
    if name == "redis-cluster":
        return int(ask(url, b"DBSIZE\r\n").strip().lstrip(b":"))
    stats = ask(url, b"stats\r\n").decode().splitlines()
    return next(int(line.split()[2]) for line in stats if line.startswith("STAT curr_items "))


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    folder = tmp_path_factory.mktemp("groups")
    directory = folder / ".faasgd"
    stack = stacks.stack_copy(ROOT, folder / "stack", edit=stacks.with_store_groups)
    started = faasgd("up", "--port", free_port(), "--dir", directory, "--filter", "emnist-*", "-f", stack)
    assert started.returncode == 0, started.stdout + started.stderr
    yield directory, json.loads((directory / "state.json").read_text())
    faasgd("down", "--dir", directory)


@pytest.mark.parametrize("store, group, members", [("cluster", "redis-cluster", 3), ("pool", "memcached-pool", 3)])
def test_two_workers_reach_085_on_each_group_and_every_member_holds_chunks(runtime, store, group, members):
    directory, state = runtime
    run = faasgd("train", "--workers", 2, "--dataset", "fashion-mnist", "--target-accuracy", 0.85,
                 "--store", store, "--json", "--dir", directory, "--gateway", state["gateway_url"])
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["state"] == "done" and result["error"] is None
    assert result["reached_target"] and result["final_validation_accuracy"] >= 0.85
    masters = state["store_groups"][group]["members"][:members]  # a cluster lists its masters first
    held = {member["url"]: keys_held(group, member["url"]) for member in masters}
    assert all(count > 0 for count in held.values()), held

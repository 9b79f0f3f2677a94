"""`faasgd up` returns once the gateway serves, before its replicas do, and a first call waits for one; `--filter`
deploys only the functions it matches;
`faasgd down` stops idle replicas without their drain and leaves nothing behind: no process of the runtime's
tree (replicas under the watchdog, their functions, the stores, the store groups the stack names, the broker), no
listening port, no state file, no temp folder. A stack that names no store group starts none. A runtime that
cannot start (a disk too small for the queue) makes `up` say why in one line, with nothing left running. `up`
whose stdout nobody reads (`faasgd up | head -1`) ends quietly and leaves the runtime it started running. `faasgd
logs` prints the replicas of the runtime running now, none of an earlier one's."""

import json
import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

from faasgd.local.lifecycle import credentials
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient
from faasgd.testing import stacks
from support.closed_pipe import run_into_a_closed_pipe
from support.paths import ROOT
from support.small_disk import small_disk

pytestmark = pytest.mark.e2e


def faasgd(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


def tree(pids: list[int]) -> set[psutil.Process]:
    found = set()
    for pid in pids:
        try:
            root = psutil.Process(pid)
            found |= {root, *root.children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    return found


def listening_ports(processes: set[psutil.Process]) -> set[int]:
    """TCP ports the processes listen on, as seen from the host's network namespace (the watchdogs' own
    namespaces are theirs: what they listen on there is no port of this host)."""
    host = {c.laddr.port for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    ports = set()
    for process in processes:
        try:
            ports |= {c.laddr.port for c in process.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            pass
    return ports & host


def refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def answers(port: int, request: bytes, reply: bytes) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        return sock.recv(64).startswith(reply)


def test_up_serves_a_first_call_while_replicas_start_and_down_leaves_nothing(tmp_path):
    directory = tmp_path / ".faasgd"
    stack = stacks.stack_copy(ROOT, tmp_path / "stack", edit=stacks.with_store_groups)  # naming the sharded stores
    temp = tmp_path / "tmp"  # the machine's temp folder: the runtime puts nothing there (its own is <dir>/tmp)
    temp.mkdir()
    started = faasgd("up", "--port", free_port(), "--dir", directory, "--filter", "emnist-*",  # as `faasgd train` does
                     "-f", stack, "--redis-cluster-masters", 2, env={**os.environ, "TMPDIR": str(temp)})
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        state = json.loads((directory / "state.json").read_text())
        groups = state["store_groups"]  # the emnist functions name a cluster and a pool of three
        assert [len(groups[name]["members"]) for name in ("redis-cluster", "memcached-pool")] == [2, 3]
        asks = (("redis-cluster", b"PING\r\n", b"+PONG"), ("memcached-pool", b"version\r\n", b"VERSION"))
        for name, request, reply in asks:
            ports = [int(member["url"].rsplit(":", 1)[1].split("/")[0]) for member in groups[name]["members"]]
            assert all(answers(port, request, reply) for port in ports), name
            assert groups[name]["url"] in started.stdout  # `up` prints each group
        member_pids = [member["pid"] for group in groups.values() for member in group["members"]]
        assert all(str(pid) in started.stdout for pid in member_pids)
        pool = state["services"]["memcached-pool-2.memcached-pool.openfaas-fn:11211"]
        assert pool == groups["memcached-pool"]["members"][2]["url"].split("://")[1]
        gateway = GatewayClient(state["gateway_url"], 60, auth=credentials.read(directory / "secrets"))
        # at once: an unknown job's status is emnist-setup's own 404, not the gateway's 502 "no healthy replica"
        answer = gateway.invoke("emnist-setup", method="GET", query={"job_id": "no-such-job"})
        assert answer.status == 404 and "no-such-job" in answer.body.decode(), answer.body
        functions = gateway.request("GET", "/system/functions").json()
        assert sorted(f["name"] for f in functions) == ["emnist-setup", "emnist-train"]

        state = json.loads((directory / "state.json").read_text())  # now with every replica listed
        pids = [state["pid"], state["broker"]["pid"], *(s["pid"] for s in state["stores"].values()),
                *(r["pid"] for r in state["replicas"]), *member_pids]
        processes = tree(pids)
        ports = listening_ports(processes)
        assert len(processes) > len(pids) and ports  # the watchdogs' functions are in the tree; the servers listen
        # the servers' temp folders (configs, logs, the auth files with the stores' password) are the runtime's own
        assert list((directory / "tmp").iterdir()) and list(temp.iterdir()) == []

        stopped = faasgd("down", "--dir", directory)
        assert stopped.returncode == 0, stopped.stderr
        left = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not left, f"faasgd down left {[(p.pid, p.name()) for p in left]}"
        assert [port for port in ports if not refused(port)] == []
        assert not (directory / "state.json").exists()
        assert not (directory / "replicas").exists() or not list((directory / "replicas").iterdir())
        assert not (directory / "tmp").exists() and list(temp.iterdir()) == []  # every server's temp folder gone
    finally:
        faasgd("down", "--dir", directory)  # after a failed assertion too; nothing to stop otherwise


def test_down_after_the_runtime_was_killed_stops_its_servers_and_removes_their_files(tmp_path):
    # a SIGKILLed daemon removes nothing: its servers' folders (configs, logs) stayed in /tmp for good when they were
    # made there (hundreds a day on a test machine); `down` stops the servers and removes the folders
    directory = tmp_path / ".faasgd"
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    started = faasgd("up", "--port", free_port(), "--dir", directory, "--filter", "emnist-*", env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        state = json.loads((directory / "state.json").read_text())
        servers = [psutil.Process(entry["pid"]) for entry in [*state["stores"].values(), state["broker"]]]
        folders = list((directory / "tmp").iterdir())
        logs = sorted(path.name for folder in folders for path in folder.iterdir() if path.suffix == ".log")
        assert logs == ["memcached.log", "nats.log", "redis.log"]  # a folder for each server, its log in it
        daemon = psutil.Process(state["pid"])
        os.kill(daemon.pid, 9)
        deadline = time.monotonic() + 10  # gone, or a zombie where nothing reaps orphans: dead either way
        while daemon.is_running() and daemon.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(server.is_running() for server in servers)  # orphaned: nothing stopped them, nothing removed
        assert all(folder.exists() for folder in folders)

        stopped = faasgd("down", "--dir", directory, env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert not [server.pid for server in servers if server.is_running()
                    and server.status() != psutil.STATUS_ZOMBIE]
        assert not (directory / "tmp").exists() and list(temp.iterdir()) == []
    finally:
        faasgd("down", "--dir", directory)


def test_down_removes_only_the_server_folders_from_a_tmp_folder_the_user_had(tmp_path):
    # `--dir .` in a project with a tmp/ of its own: down removes the servers' folders and leaves the user's files
    directory = tmp_path / "project"
    (directory / "tmp").mkdir(parents=True)
    (directory / "tmp" / "notes.txt").write_text("mine")
    started = faasgd("up", "--port", free_port(), "--dir", directory, "--filter", "emnist-*")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        assert len(list((directory / "tmp").glob("faasgd-*"))) >= 3
    finally:
        assert faasgd("down", "--dir", directory).returncode == 0
    assert [p.name for p in (directory / "tmp").iterdir()] == ["notes.txt"]


def test_the_shipped_stack_names_no_store_group_and_starts_none(tmp_path):
    directory = tmp_path / ".faasgd"
    started = faasgd("up", "--port", free_port(), "--dir", directory, "--filter", "emnist-*")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        state = json.loads((directory / "state.json").read_text())
        assert state["store_groups"] == {} and set(state["stores"]) == {"redis", "memcached"}
        assert "redis-cluster" not in started.stdout and "memcached-pool" not in started.stdout
    finally:
        assert faasgd("down", "--dir", directory).returncode == 0


def test_up_on_a_disk_too_small_for_the_queue_says_only_why_and_leaves_nothing_running(tmp_path):
    with small_disk(tmp_path, "16m") as disk:
        (disk / "filler").write_bytes(b"\0" * (14 << 20))  # 2 MiB left: JetStream needs more than 4
        directory, port = disk / ".faasgd", free_port()
        started = faasgd("up", "--port", port, "--dir", directory, "--filter", "emnist-*")
        assert started.returncode != 0
        assert started.stderr.count("\n") == 1, started.stderr  # one line, no traceback
        assert started.stderr.startswith(f"faasgd: error: the async queue's directory {directory / 'jetstream'} has ")
        assert "faasgd up --dir" in started.stderr and "Traceback" not in started.stdout + started.stderr
        assert "Traceback" in (directory / "logs" / "runtime.log").read_text()  # kept for whoever looks
        assert not (directory / "state.json").exists() and refused(port)
        assert not [p for p in psutil.process_iter(["cmdline"]) if str(directory) in " ".join(p.info["cmdline"] or [])]


def test_up_into_a_closed_pipe_ends_quietly_and_leaves_the_runtime_serving(tmp_path):
    directory, port = tmp_path / ".faasgd", free_port()
    argv = [sys.executable, "-m", "faasgd.cli", "up", "--port", str(port), "--dir", str(directory), "--filter", "emnist-*"]
    try:
        for _ in range(2):  # starting it, then finding it running
            ended = run_into_a_closed_pipe(argv, cwd=ROOT)
            assert (ended.returncode, ended.stderr) == (141, "")
            state = json.loads((directory / "state.json").read_text())
            assert state["gateway_url"] == f"http://127.0.0.1:{port}"
            gateway = GatewayClient(state["gateway_url"], 60, auth=credentials.read(directory / "secrets"))
            assert sorted(f["name"] for f in gateway.request("GET", "/system/functions").json()) == \
                ["emnist-setup", "emnist-train"]
    finally:
        assert faasgd("down", "--dir", directory).returncode == 0


def test_logs_print_the_replicas_of_the_running_runtime_not_an_earlier_ones(tmp_path):
    directory = tmp_path / ".faasgd"
    up = ("up", "--dir", directory, "--filter", "emnist-*", "--wait")
    assert faasgd(*up, "--port", free_port()).returncode == 0
    try:  # an earlier runtime: emnist-train scaled to 3 replicas
        assert faasgd("scale", "emnist-train", "--replicas", 3, "--wait", 60, "--dir", directory).returncode == 0
        assert (directory / "logs" / "emnist-train-3.log").is_file()
    finally:
        assert faasgd("down", "--dir", directory).returncode == 0
    assert faasgd(*up, "--port", free_port()).returncode == 0  # the running one: 2 replicas, named as before
    try:
        train = faasgd("logs", "emnist-train", "--dir", directory)
        setup = faasgd("logs", "emnist-setup", "--dir", directory)
        assert train.returncode == setup.returncode == 0
        starts = [line.split(": ", 1)[0] for line in train.stdout.splitlines() if "faasgd: starting emnist-train-" in line]
        assert sorted(starts) == ["emnist-train-1", "emnist-train-2"], train.stdout  # once each, and no -3
        assert setup.stdout.count("faasgd: starting emnist-setup-1 ") == 1, setup.stdout
        previous = directory / "logs" / "previous"  # the earlier runtime's, set aside
        assert sorted(p.name for p in previous.glob("emnist-train-*.log")) == [f"emnist-train-{i}.log" for i in (1, 2, 3)]
    finally:
        assert faasgd("down", "--dir", directory).returncode == 0

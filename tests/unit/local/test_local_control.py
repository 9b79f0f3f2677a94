"""state.json between the daemon and `faasgd up`/`down`: identities round trip, and `down` signals only its own.

In-process against a fake process table (tests/support/fake_processes.py): no process is started or signalled.
"""

import json
import os
import signal
from types import SimpleNamespace

import pytest

from faasgd.errors import ConfigError
from faasgd.local.lifecycle import control, daemon
from faasgd.local.processes import ProcessRef
from faasgd.local.queue import rules
from faasgd.local.queue.rules import DeliveryPolicy
from faasgd.local.services.stores import ServerProcess
from faasgd.testing import stacks
from faasgd.local.lifecycle.options import UpOptions, check_options
from faasgd.local.lifecycle.runtime_state import initial_state
from faasgd.local.lifecycle.state_file import write_state

T0 = 1_700_000_000.0


def fake_store(name, port, ref):
    url = f"redis://127.0.0.1:{port}/0" if name == "redis" else f"memcached://127.0.0.1:{port}"
    return ServerProcess(name=name, url=url, port=port, popen=None, ref=ref)


def write(directory, state):
    (directory / daemon.STATE_FILE).write_text(json.dumps(state))


def test_the_daemons_state_reads_back_with_every_identity(table, tmp_path):
    table.add(os.getpid(), T0)  # the daemon is the process calling initial_state
    stores = {"redis": fake_store("redis", 7001, ProcessRef(501, T0 + 1)),
              "memcached": fake_store("memcached", 7002, ProcessRef(502, T0 + 2))}
    options = UpOptions(str(tmp_path / "stack.yml"), 7000)
    table_of_services = daemon.service_table(7000, stores)
    write_state(tmp_path, {**initial_state(options, tmp_path, stores, table_of_services), "ready": True})

    state = control.read_state(tmp_path)
    assert state["gateway_url"] == "http://127.0.0.1:7000" and state["ready"] is True
    assert state["stores"] == {"redis": {"url": "redis://127.0.0.1:7001/0", "pid": 501, "create_time": T0 + 1},
                               "memcached": {"url": "memcached://127.0.0.1:7002", "pid": 502, "create_time": T0 + 2}}
    assert ProcessRef.from_json(state) == ProcessRef(os.getpid(), T0)
    assert state["services"]["redis.openfaas-fn:6379"] == "127.0.0.1:7001"
    assert state["services"]["gateway.openfaas:8080"] == "127.0.0.1:7000"


def test_a_state_whose_daemon_pid_was_reused_is_no_runtime(table, tmp_path):
    table.add(100, T0 + 50)
    write(tmp_path, {"pid": 100, "create_time": T0, "gateway_url": "http://127.0.0.1:1"})
    assert control.read_state(tmp_path) is None
    write(tmp_path, {"pid": 100, "create_time": T0 + 50, "gateway_url": "http://127.0.0.1:1"})
    assert control.read_state(tmp_path)["pid"] == 100
    (tmp_path / daemon.STATE_FILE).write_text("[1, 2]")
    assert control.read_state(tmp_path) is None


def test_down_signals_only_the_processes_it_started(table, tmp_path):
    runtime = table.add(100, T0)
    replica = table.add(103, T0 + 3)  # left behind: its daemon did not stop it
    reused = [table.add(101, T0 + 999), table.add(104, T0 - 999)]  # their pids now name other processes
    legacy = table.add(102, T0 + 2)  # listed without a create time: never ours
    write(tmp_path, {"pid": 100, "create_time": T0, "gateway_url": "http://127.0.0.1:1",
                     "stores": {"redis": {"url": "redis://127.0.0.1:2/0", "pid": 101, "create_time": T0 + 1},
                                "memcached": {"url": "memcached://127.0.0.1:3", "pid": 102}},
                     "replicas": [{"name": "emnist-train-1", "pid": 103, "create_time": T0 + 3},
                                  {"name": "emnist-train-2", "pid": 104, "create_time": T0 + 4}]})

    assert control.down(tmp_path) == [100, 103]
    assert runtime.signals == [signal.SIGTERM] and replica.signals == [signal.SIGTERM]
    assert [p.signals for p in reused] == [[], []] and legacy.signals == []
    assert not (tmp_path / daemon.STATE_FILE).exists()
    assert control.down(tmp_path) == []


def test_down_of_a_dead_runtime_stops_its_leftovers_and_forgets_it(table, tmp_path):
    store = table.add(201, T0 + 1)
    write(tmp_path, {"pid": 200, "create_time": T0, "stores": {"redis": {"pid": 201, "create_time": T0 + 1}},
                     "replicas": []})
    assert control.read_state(tmp_path) is None
    assert control.down(tmp_path) == [201] and store.signals == [signal.SIGTERM]
    assert not (tmp_path / daemon.STATE_FILE).exists()


def test_down_of_a_killed_runtime_stops_the_nats_server_it_left(table, tmp_path):
    broker = table.add(301, T0 + 1)
    reused = table.add(302, T0 + 999)  # a broker entry whose pid now names another process
    write(tmp_path, {"pid": 300, "create_time": T0, "stores": {}, "replicas": [],
                     "broker": {"url": "nats://127.0.0.1:4", "pid": 301, "create_time": T0 + 1}})
    assert control.down(tmp_path) == [301] and broker.signals == [signal.SIGTERM]
    write(tmp_path, {"pid": 300, "create_time": T0, "broker": {"pid": 302, "create_time": T0 + 2}})
    assert control.down(tmp_path) == [] and reused.signals == []


def test_up_hands_the_delivery_policy_to_the_daemon(table, tmp_path, monkeypatch):
    started = []

    class Refused(Exception):
        pass

    def popen(argv, **_):
        started.append(argv)
        raise Refused  # nothing is started

    monkeypatch.setattr(control.subprocess, "Popen", popen)
    monkeypatch.setattr(control, "_port_taken", lambda port: False)
    stack = tmp_path / "stack.yml"
    stack.write_text("version: 1.0\n")
    policy = DeliveryPolicy("pro", max_attempts=3, max_inflight=2)
    with pytest.raises(Refused):
        control.up(UpOptions(str(stack), 7000, tmp_path / ".faasgd", delivery=policy, watchdog="off"))  # no version call
    parsed = daemon.parse_args(started[0][3:])
    assert rules.from_flags(parsed) == policy


def test_up_after_a_crash_keeps_the_living_stores_and_broker_for_the_new_runtime_and_stops_the_rest(
        table, tmp_path, monkeypatch):
    started = []

    class Refused(Exception):
        pass

    def popen(argv, **_):
        started.append(argv)
        raise Refused

    monkeypatch.setattr(control, "subprocess", SimpleNamespace(Popen=popen, DEVNULL=-3, STDOUT=-2))
    monkeypatch.setattr(control, "_port_taken", lambda port: False)
    redis, broker = table.add(401, T0 + 1), table.add(403, T0 + 3)
    reused = table.add(402, T0 + 999)  # memcached's pid now names another process: not kept, not signalled
    replica = table.add(404, T0 + 4)
    directory = tmp_path / ".faasgd"
    directory.mkdir()
    entries = {"redis": {"url": "redis://127.0.0.1:2/0", "pid": 401, "create_time": T0 + 1},
               "memcached": {"url": "memcached://127.0.0.1:3", "pid": 402, "create_time": T0 + 2}}
    nats = {"url": "nats://127.0.0.1:4", "store_dir": "/x", "pid": 403, "create_time": T0 + 3}
    write(directory, {"pid": 400, "create_time": T0, "stores": entries, "broker": nats,
                      "replicas": [{"name": "emnist-train-1", "pid": 404, "create_time": T0 + 4}]})
    stack = tmp_path / "stack.yml"
    stack.write_text("version: 1.0\n")
    with pytest.raises(Refused):
        control.up(UpOptions(str(stack), 7000, directory))
    adopted = daemon.parse_args(started[0][3:]).adopt
    assert adopted == {"redis": entries["redis"], "nats": nats}
    assert redis.signals == [] and broker.signals == [] and reused.signals == []
    assert replica.signals == [signal.SIGTERM] and not (directory / daemon.STATE_FILE).exists()


@pytest.mark.parametrize("argv, flag", [
    (["up", "--port", "99999"], "--port"), (["up", "--port", "-5"], "--port"), (["up", "--ack-wait", "0"], "--ack-wait"),
    (["up", "--ack-wait", "-1"], "--ack-wait"), (["up", "--queue-workers", "0"], "--queue-workers"),
    (["train", "--port", "70000", "--dataset", "synthetic"], "--port"),
])
def test_bad_runtime_flags_are_one_line_naming_the_flag_and_start_nothing(tmp_path, capsys, argv, flag):
    from faasgd.cli.main import main

    code = main(argv + ["--dir", str(tmp_path / ".faasgd"), "-f", str(tmp_path / "no-stack.yml")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"faasgd: error: {flag}: ") and err.count("\n") == 1
    assert "Traceback" not in err and not (tmp_path / ".faasgd").exists()


def test_check_options_accepts_port_0_and_the_limits():
    for port in (0, 1, 65535):
        check_options(port, 0.5, 1)
    with pytest.raises(ConfigError, match="^--upstream-timeout: "):
        check_options(8080, upstream_timeout_s=float("nan"))


def test_train_starts_its_own_runtime_on_a_free_port_unless_told(monkeypatch, tmp_path):
    from faasgd.cli.main import main

    asked = []

    def up(options):
        asked.append(options.port)
        raise control.FaasgdError("stop here")

    monkeypatch.setattr(control, "up", up)
    for extra, port in (([], 0), (["--port", "8123"], 8123)):
        assert main(["train", "--dataset", "synthetic", "--dir", str(tmp_path), *extra]) == 1
        assert asked[-1] == port


def test_up_wait_asks_the_gateway_only_once_the_state_file_says_every_replica_is_available(monkeypatch):
    asked = []

    class Gateway:
        def request(self, method, path):
            asked.append(path)
            body = [{"replicas": 1, "availableReplicas": 1}]
            return SimpleNamespace(status=200, json=lambda: body)

    monkeypatch.setattr(control, "client", lambda state, timeout_s=30.0: Gateway())
    state = {"ready": True, "gateway_url": "http://127.0.0.1:1", "dir": "."}
    assert not control.healthy({**state, "available": False}) and asked == []
    assert control.healthy({**state, "available": True}) and asked == ["/healthz", "/system/functions"]
    asked.clear()
    assert control.healthy(state) and asked == ["/healthz", "/system/functions"]  # a runtime that does not say


def test_up_reads_the_stack_once_to_check_its_filter_and_its_store_groups(monkeypatch, tmp_path):
    from faasgd.local.replicas import stack
    from faasgd.local.services.stack_groups import GroupSizes
    from support.paths import ROOT

    reads = []
    real = stack.load_stack
    monkeypatch.setattr(stack, "load_stack", lambda path, *a, **k: reads.append(path) or real(path, *a, **k))
    control.check_stack(ROOT / "stack.yml", "emnist-*", GroupSizes())
    assert len(reads) == 1
    with pytest.raises(ConfigError, match="^--filter: 'nothing-\\*' matches none"):
        control.check_stack(ROOT / "stack.yml", "nothing-*", GroupSizes())
    with pytest.raises(ConfigError, match="^--redis-cluster-masters"):
        control.check_stack(stacks.stack_copy(ROOT, tmp_path / "s", edit=stacks.with_store_groups), "emnist-*",
                            GroupSizes(cluster_masters=0))
    bad = tmp_path / "bad.yml"
    bad.write_text("functions: [")
    control.check_stack(bad, "*", GroupSizes())  # the daemon names what is wrong in it
    with pytest.raises(ConfigError):
        control.check_stack(bad, "emnist-*", GroupSizes())

"""Store groups in the local runtime: planned only when the stack names them, sized by the flags, recorded in
state.json member by member, and stopped by `faasgd down`. Fake process table or fake starters: the real
groups run in tests/e2e/test_up_down.py."""

import os
import signal
import sys
import types

import pytest

from faasgd.errors import ConfigError
from faasgd.local.lifecycle import control, daemon
from faasgd.local.processes import ProcessRef
from faasgd.local.replicas.stack import load_stack
from faasgd.local.services import stack_groups
from faasgd.local.services.store_groups import ServerGroup, group_url
from faasgd.local.services.stores import ServerProcess, start_memcached
from faasgd.testing import stacks
from faasgd.local.lifecycle.options import UpOptions
from faasgd.local.lifecycle.runtime_state import initial_state
from faasgd.local.lifecycle.state_file import write_state
from support.paths import ROOT

T0 = 1_700_000_000.0
POOL_ENV = {"stores": "pool=memcached://memcached-pool-0.memcached-pool.openfaas-fn:11211,"
                      "memcached-pool-1.memcached-pool.openfaas-fn:11211"}
CLUSTER_ENV = {"stores": "cluster=redis-cluster://redis-cluster.openfaas-fn:6379"}


def member(name, port, pid):
    return ServerProcess(name=name, url=f"x://127.0.0.1:{port}", port=port, popen=None, ref=ProcessRef(pid, T0 + pid))


def fake_group(name, scheme, ports, first_pid):
    servers = [member(name, port, first_pid + i) for i, port in enumerate(ports)]
    return ServerGroup(name, group_url(scheme, servers), servers)


def test_the_repository_stack_names_no_group_and_its_opt_in_line_a_three_master_cluster_and_a_pool_of_three(tmp_path):
    specs = load_stack(ROOT / "stack.yml", env={})
    assert stack_groups.plan([s.environment for s in specs.values()], stack_groups.GroupSizes()) == \
        stack_groups.GroupPlan()  # sharded stores are opt-in
    opted = load_stack(stacks.stack_copy(ROOT, tmp_path, edit=stacks.with_store_groups), env={})
    assert stack_groups.plan([s.environment for s in opted.values()], stack_groups.GroupSizes()) == \
        stack_groups.GroupPlan(cluster_masters=3, cluster_replicas=0, pool_servers=3)
    stacking = [s.environment for name, s in opted.items() if name.startswith("stacking-")]
    assert stack_groups.plan(stacking, stack_groups.GroupSizes()) == stack_groups.GroupPlan()  # none named


def test_a_stack_naming_more_pool_members_than_a_local_pool_starts_is_refused_before_anything_starts():
    env = {"stores": "pool=memcached://" + ",".join(f"memcached-pool-{i}.memcached-pool.openfaas-fn:11211"
                                                    for i in range(17))}
    with pytest.raises(ConfigError, match="at most 16") as error:
        stack_groups.plan([env], stack_groups.GroupSizes())
    assert error.value.field == "stores"


def test_sizes_come_from_the_flags():
    sizes = stack_groups.GroupSizes(cluster_masters=1, cluster_replicas=1, pool_servers=4)
    assert stack_groups.plan([POOL_ENV, CLUSTER_ENV], sizes) == stack_groups.GroupPlan(1, 1, 4)
    assert stack_groups.plan([POOL_ENV], sizes) == stack_groups.GroupPlan(0, 0, 4)
    assert sizes.to_argv() == ["--redis-cluster-masters", "1", "--redis-cluster-replicas", "1",
                               "--memcached-pool-servers", "4"]


@pytest.mark.parametrize("sizes, flag", [
    (stack_groups.GroupSizes(cluster_masters=0), "--redis-cluster-masters"),
    (stack_groups.GroupSizes(cluster_replicas=-1), "--redis-cluster-replicas"),
    (stack_groups.GroupSizes(pool_servers=0), "--memcached-pool-servers"),
    (stack_groups.GroupSizes(pool_servers=1), "--memcached-pool-servers"),  # the stack names two members
    (stack_groups.GroupSizes(pool_servers=17), "--memcached-pool-servers"),  # more than a local pool starts
])
def test_sizes_that_cannot_be_started_are_refused_naming_the_flag(sizes, flag):
    with pytest.raises(ConfigError) as error:
        stack_groups.plan([POOL_ENV], sizes)
    assert error.value.field == flag


def test_under_docker_the_groups_bind_the_bridge_address(monkeypatch):
    started = []

    def start_redis_cluster(**kwargs):
        started.append(kwargs)
        return fake_group("redis", "redis-cluster", [7101], 601)

    monkeypatch.setitem(sys.modules, "faasgd.local.services.redis_cluster",
                        types.SimpleNamespace(start_redis_cluster=start_redis_cluster))
    start = stack_groups.starters(stack_groups.GroupPlan(cluster_masters=2), also_bind="172.18.0.1")
    assert set(start) == {"redis-cluster"}
    start["redis-cluster"]()
    stack_groups.starters(stack_groups.GroupPlan(cluster_masters=1), password="pw")["redis-cluster"]()
    assert started == [{"masters": 2, "replicas": 0, "also_bind": "172.18.0.1", "password": None},
                       {"masters": 1, "replicas": 0, "also_bind": None, "password": "pw"}]


def test_a_real_cluster_started_with_a_second_address_announces_it_and_serves_there():
    from redis.cluster import RedisCluster

    from faasgd.local.services.redis_cluster import start_redis_cluster

    group = start_redis_cluster(masters=2, also_bind="127.0.0.2")
    try:
        client = RedisCluster(host="127.0.0.1", port=group.ports[0])  # seeded on loopback, as the host is
        try:
            assert {node.host for node in client.get_nodes()} == {"127.0.0.2"}
            for i in range(20):
                client.set(f"announce-{i}", i)
            assert [int(client.get(f"announce-{i}")) for i in range(20)] == list(range(20))
        finally:
            client.close()
    finally:
        group.stop()


def test_state_records_every_member_and_services_point_at_them(table, tmp_path):
    table.add(os.getpid(), T0)
    groups = {"redis-cluster": fake_group("redis", "redis-cluster", [7101, 7102, 7103], 601),
              "memcached-pool": fake_group("memcached", "memcached", [7201, 7202], 701)}
    stores = {"redis": member("redis", 7001, 501), "memcached": member("memcached", 7002, 502)}
    services = daemon.service_table(7000, stores, groups)
    assert services["redis-cluster.openfaas-fn:6379"] == "127.0.0.1:7101"  # a seed node
    assert services["memcached-pool-1.memcached-pool.openfaas-fn.svc.cluster.local:11211"] == "127.0.0.1:7202"
    assert "memcached-pool-2.memcached-pool:11211" not in services
    under_docker = daemon.service_table(7000, stores, groups, host="172.18.0.1")
    assert under_docker["memcached-pool-0.memcached-pool:11211"] == "172.18.0.1:7201"

    options = UpOptions(str(tmp_path / "stack.yml"), 7000)
    write_state(tmp_path, {**initial_state(options, tmp_path, stores, services, groups), "ready": True})
    state = control.read_state(tmp_path)
    assert state["store_groups"]["memcached-pool"] == {
        "url": "memcached://127.0.0.1:7201,127.0.0.1:7202",
        "members": [{"url": "x://127.0.0.1:7201", "pid": 701, "create_time": T0 + 701},
                    {"url": "x://127.0.0.1:7202", "pid": 702, "create_time": T0 + 702}]}
    assert [ref.pid for ref in stack_groups.member_refs(state)] == [601, 602, 603, 701, 702]


def test_down_and_a_new_up_stop_every_member_of_a_dead_runtime(table, tmp_path):
    members = [table.add(801, T0 + 1), table.add(802, T0 + 2)]
    reused = table.add(803, T0 + 999)  # its pid now names another process
    state = {"pid": 800, "create_time": T0, "stores": {}, "replicas": [],
             "store_groups": {"memcached-pool": {"url": "memcached://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "members": [
                 {"pid": 801, "create_time": T0 + 1}, {"pid": 802, "create_time": T0 + 2},
                 {"pid": 803, "create_time": T0 + 3}]}}}
    stopped, kept = control._leftovers(tmp_path, state, keep_stores=True)  # `up` after a crash: groups start afresh
    assert sorted(stopped) == [801, 802] and kept == {}
    assert [p.signals for p in members] == [[signal.SIGTERM]] * 2 and reused.signals == []


def test_start_servers_starts_the_planned_groups_with_the_other_servers(tmp_path, monkeypatch):
    calls = []

    def start_memcached_pool(servers=3, item_size="2m", memory_mb=256, also_bind=None):
        calls.append(("pool", servers, also_bind))
        members = [start_memcached(memory_mb=16) for _ in range(servers)]
        return ServerGroup("memcached-pool", group_url("memcached", members), members)

    monkeypatch.setitem(sys.modules, "faasgd.local.services.memcached_pool",
                        types.SimpleNamespace(start_memcached_pool=start_memcached_pool))
    monkeypatch.setattr(daemon, "start_nats", lambda folder: start_memcached(memory_mb=16))  # any real server
    monkeypatch.setattr(daemon, "jetstream_answers", lambda port: True)
    stores, broker, groups = daemon.start_servers(tmp_path, groups=stack_groups.GroupPlan(pool_servers=2))
    try:
        assert calls == [("pool", 2, None)] and set(groups) == {"memcached-pool"}
        assert set(stores) == {"redis", "memcached"}
        assert groups["memcached-pool"].alive() and len(groups["memcached-pool"].servers) == 2
    finally:
        daemon.stop_servers([*stores.values(), broker, *groups.values()])
    assert not groups["memcached-pool"].alive()


def test_a_group_that_fails_to_start_stops_the_others(tmp_path, monkeypatch):
    def start_redis_cluster(**_):
        raise ConfigError("redis-cluster", "no slots")

    monkeypatch.setitem(sys.modules, "faasgd.local.services.redis_cluster",
                        types.SimpleNamespace(start_redis_cluster=start_redis_cluster))
    started = []
    real = daemon.start_memcached
    monkeypatch.setattr(daemon, "start_memcached", lambda **kw: started.append(real(memory_mb=16)) or started[-1])
    monkeypatch.setattr(daemon, "start_nats", lambda folder: start_memcached(memory_mb=16))
    with pytest.raises(ConfigError, match="no slots"):
        daemon.start_servers(tmp_path, groups=stack_groups.GroupPlan(cluster_masters=3))
    assert started and not started[0].alive()


def test_up_and_status_print_each_group_with_its_members_pids():
    from faasgd.cli.runtime import store_lines

    state = {"stores": {"redis": {"url": "redis://127.0.0.1:7001/0", "pid": 501}},
             "store_groups": stack_groups.group_entries(
                 {"memcached-pool": fake_group("memcached", "memcached", [7201, 7202], 701)})}
    assert store_lines(state) == [
        "redis      redis://127.0.0.1:7001/0  (pid 501)",
        "memcached-pool memcached://127.0.0.1:7201,127.0.0.1:7202  (2 servers, pids 701, 702)"]
    assert store_lines({"stores": {}}) == []  # a state file written before groups existed

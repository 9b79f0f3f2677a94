"""A Redis Cluster on loopback: `masters` redis-servers in cluster mode, each with `replicas` replicas.

The cluster is put together by hand, which works for any number of masters (`redis-cli --cluster create`
wants at least 3): each master takes an even range of the 16384 hash slots (CLUSTER ADDSLOTSRANGE), every
node meets the first (CLUSTER MEET), each replica follows its master (CLUSTER REPLICATE), and the group is
returned once every node reports cluster_state:ok and every replica holds its master's first copy (the
replicas sync at once: repl-diskless-sync-delay 0).

Like `start_redis`: no persistence, 127.0.0.1 (and `also_bind`), a password only in a 0600 config file
(replicas authenticate to their masters with it: masterauth). Each node's cluster bus gets a free port of its
own (the default, port + 10000, may be taken or past 65535). With `also_bind` the nodes announce that
address (what CLUSTER SLOTS tells clients), which this host and the containers behind it both reach; else
127.0.0.1. `node_timeout_ms` is how long a master may be silent before its replica takes over (redis'
cluster-node-timeout; low here, so a test's failover takes seconds).
"""

from __future__ import annotations

import time

from faasgd.checks import whole_number
from faasgd.errors import StoreUnavailable
from faasgd.local.services import resp, stores
from faasgd.local.services.store_groups import ServerGroup, group_url
from faasgd.local.services.stores import LOOPBACK, ServerProcess

SLOTS = 16384
POLL_S = 0.1


def start_redis_cluster(masters: int = 3, replicas: int = 0, password: str | None = None,
                        also_bind: str | None = None, ready_timeout: float = 30.0,
                        node_timeout_ms: int = 2000) -> ServerGroup:
    """Start and join a cluster; its ServerGroup ("redis-cluster", masters first in `.servers`)."""
    for field, value, low in (("masters", masters, 1), ("replicas", replicas, 0), ("node_timeout_ms", node_timeout_ms, 100)):
        whole_number(value, field, low=low)
    servers: list[ServerProcess] = []
    group = ServerGroup("redis-cluster", "", servers, password)
    try:
        for _ in range(masters * (1 + replicas)):
            servers.append(start_node(password, also_bind, node_timeout_ms, ready_timeout))
        group.url = group_url("redis-cluster", servers)
        join(servers[:masters], servers[masters:], password, ready_timeout, also_bind or LOOPBACK)
    except BaseException:
        group.stop()
        raise
    return group


def start_node(password: str | None, also_bind: str | None, node_timeout_ms: int, ready_timeout: float) -> ServerProcess:
    """One redis-server in cluster mode, its nodes.conf in its own temporary folder."""
    binary = stores.server_binary("redis-server", "redis-server")

    def launch(port: int) -> ServerProcess:
        tmp = stores.server_folder("faasgd-redis-cluster-")
        secret = f"requirepass {stores.redis_quoted(password)}\nmasterauth {stores.redis_quoted(password)}\n" \
            if password else ""
        conf = stores.private_file(tmp.name, "redis.conf", secret)
        argv = [binary, conf, "--port", str(port), "--bind", LOOPBACK,
                *([also_bind, "--protected-mode", "no", "--cluster-announce-ip", also_bind] if also_bind else []),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", str(stores.free_port()),
                "--cluster-node-timeout", str(node_timeout_ms), "--cluster-replica-validity-factor", "0",
                "--repl-diskless-sync-delay", "0",
                "--save", "", "--appendonly", "no", "--dir", tmp.name, "--daemonize", "no"]
        server = stores.spawn_server("redis", f"redis://{LOOPBACK}:{port}/0", port, argv, tmp, password)
        server.workdir = tmp.name
        return server

    return stores.start_server(launch, None, stores.redis_answers, ready_timeout)


def join(masters: list[ServerProcess], replicas: list[ServerProcess], password: str | None, timeout: float,
         announced: str) -> None:
    """Give the masters their slots, introduce every node to the first (at the address the nodes announce),
    attach the replicas round-robin (over faasgd.local.services.resp: the local runtime imports no store client)."""
    ports = [s.port for s in masters + replicas]
    for i, master in enumerate(masters):
        first, last = i * SLOTS // len(masters), (i + 1) * SLOTS // len(masters) - 1
        resp.command(master.port, password, "CLUSTER", "ADDSLOTSRANGE", first, last)
    bus = resp.command(masters[0].port, password, "CONFIG", "GET", "cluster-port")[1].decode()
    for server in masters[1:] + replicas:
        resp.command(server.port, password, "CLUSTER", "MEET", announced, masters[0].port, bus)
    deadline = time.monotonic() + timeout
    wait_until(lambda: all(known(p, password) >= len(ports) for p in ports), deadline, "every node to meet")
    for k, replica in enumerate(replicas):
        master_id = resp.command(masters[k % len(masters)].port, password, "CLUSTER", "MYID").decode()
        wait_until(lambda: replicate(replica.port, password, master_id), deadline, "a replica to attach")
    expected = {m.port: sum(1 for k in range(len(replicas)) if k % len(masters) == i) for i, m in enumerate(masters)}
    wait_until(lambda: all(ok(p, password) for p in ports)
               and all(attached(p, password) >= n for p, n in expected.items())
               and all(synced(r.port, password) for r in replicas), deadline, "cluster_state:ok")


def known(port: int, password: str | None) -> int:
    return int(resp.info(port, password, "CLUSTER", "INFO")["cluster_known_nodes"])


def ok(port: int, password: str | None) -> bool:
    return resp.info(port, password, "CLUSTER", "INFO")["cluster_state"] == "ok"


def attached(port: int, password: str | None) -> int:
    return int(resp.info(port, password, "INFO", "replication").get("connected_slaves", 0))


def synced(port: int, password: str | None) -> bool:
    """A replica whose first full copy of its master is done (its link is up)."""
    return resp.info(port, password, "INFO", "replication").get("master_link_status") == "up"


def replicate(port: int, password: str | None, master_id: str) -> bool:
    """CLUSTER REPLICATE, which fails until the replica has learnt the master's id through gossip."""
    try:
        resp.command(port, password, "CLUSTER", "REPLICATE", master_id)
        return True
    except resp.ReplyError:
        return False


def wait_until(check, deadline: float, what: str) -> None:
    while not check():
        if time.monotonic() >= deadline:
            raise StoreUnavailable("redis-cluster (local)", f"gave up waiting for {what}")
        time.sleep(POLL_S)

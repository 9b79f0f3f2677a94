"""Store servers inside the shaped nodes of faasgd.testing.shaped_net, and their own byte counters.

`start_in(net, node, kind)` runs memcached or redis-server in `node`'s namespace, bound to the node's address
only, and returns once it answers there from the host. `start_cluster(net)` runs one cluster-enabled
redis-server per node and joins them into a Redis Cluster with one master per node (the slots split evenly:
CLUSTER ADDSLOTSRANGE, then CLUSTER MEET; any number of masters), returning once every node reports
cluster_state:ok. `store_url(kind, servers)` is the URL open_store takes for them: one memcached node is
memcached://A:P and several memcached://A1:P1,A2:P2,...; one Redis node redis://A:P/0 and several
redis-cluster://A1:P1,... (a ShapedNet made with node_to_node=True: the cluster's bus runs node to node).

`counters(server)` reads what the server itself counted: memcached `stats` bytes_read / bytes_written, Redis
INFO stats total_net_input_bytes / total_net_output_bytes (its clients' traffic; the cluster bus is not in them),
so the bytes per node of a bench do not rest on the client's own meter.
"""

from __future__ import annotations

import socket
import tempfile
import time

from faasgd.store.redis_lib import redis

from faasgd.errors import ConfigError, StoreUnavailable
from faasgd.local import ServerProcess, server_binary, spawn_server
from faasgd.testing.shaped_net import Node, ShapedNet

PORTS = {"memcached": 11211, "redis": 6379}
SLOTS = 16384  # a Redis Cluster's hash slots
READY_S = 15.0


def start_in(net: ShapedNet, node: Node, kind: str, cluster: bool = False) -> ServerProcess:
    """memcached or redis-server (`cluster`: cluster-enabled) in `node`'s namespace, answering on its address."""
    if kind not in PORTS:
        raise ConfigError("kind", f"must be one of {', '.join(PORTS)}, not {kind!r}")
    port, tmp = PORTS[kind], tempfile.TemporaryDirectory(prefix=f"faasgd-shaped-{kind}-")
    if kind == "memcached":
        argv = [server_binary("memcached", "memcached"), "-l", node.address, "-p", str(port), "-U", "0", "-I", "2m",
                "-m", "256", "-u", "root"]
        url = f"memcached://{node.address}:{port}"
    else:
        argv = [server_binary("redis-server", "redis-server"), "--port", str(port), "--bind", node.address,
                "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", tmp.name, "--daemonize", "no"]
        if cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", f"{tmp.name}/nodes.conf"]
        url = f"redis://{node.address}:{port}/0"
    server = spawn_server(kind, url, port, net.command(node, argv), tmp, None)
    try:
        wait_answering(server, node.address)
    except BaseException:
        server.stop()
        raise
    return server


def start_cluster(net: ShapedNet) -> list[ServerProcess]:
    """A Redis Cluster of one master per node of `net`; returned once every node says cluster_state:ok."""
    servers: list[ServerProcess] = []
    try:
        for node in net.nodes:
            servers.append(start_in(net, node, "redis", cluster=True))
        clients = [redis.Redis(node.address, PORTS["redis"], socket_timeout=5) for node in net.nodes]
        for index, client in enumerate(clients):
            first, last = slot_range(index, len(clients))
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
        for node in net.nodes[1:]:
            clients[0].execute_command("CLUSTER", "MEET", node.address, PORTS["redis"])
        wait_cluster_ok(clients)
        return servers
    except BaseException:
        for server in servers:
            server.stop()
        raise


def slot_range(index: int, masters: int) -> tuple[int, int]:
    """Master `index`'s slots: an even split of 0..16383, the first masters taking one more when uneven."""
    size, extra = divmod(SLOTS, masters)
    first = index * size + min(index, extra)
    return first, first + size + (1 if index < extra else 0) - 1


def wait_cluster_ok(clients: list[redis.Redis]) -> None:
    deadline = time.monotonic() + READY_S
    while not all(client.cluster("INFO")["cluster_state"] == "ok" for client in clients):
        if time.monotonic() >= deadline:
            states = [client.cluster("INFO")["cluster_state"] for client in clients]
            raise StoreUnavailable("redis-cluster", f"cluster_state not ok on every node after {READY_S}s: {states}")
        time.sleep(0.1)


def wait_answering(server: ServerProcess, address: str) -> None:
    request = b"version\r\n" if server.name == "memcached" else b"PING\r\n"
    deadline = time.monotonic() + READY_S
    while True:
        if not server.alive():
            raise StoreUnavailable(server.url, f"{server.name} exited: {server.log_tail()}")
        try:
            with socket.create_connection((address, server.port), timeout=0.5) as sock:
                sock.sendall(request)
                if sock.recv(64):
                    return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise StoreUnavailable(server.url, f"{server.name} did not answer within {READY_S}s")
        time.sleep(0.05)


def store_url(kind: str, servers: list[ServerProcess]) -> str:
    """What open_store takes for `servers` (one node: the plain store; several: a pool or a cluster)."""
    hosts = [server.url.split("://", 1)[1].split("/", 1)[0] for server in servers]
    if kind == "memcached":
        return "memcached://" + ",".join(hosts)
    return f"redis://{hosts[0]}/0" if len(hosts) == 1 else "redis-cluster://" + ",".join(hosts)


def counters(server: ServerProcess) -> tuple[int, int]:
    """(bytes the server read, bytes it wrote) since it started, as the server counts them."""
    host, port = server.url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
    if server.name == "memcached":
        stats = memcached_stats(host, int(port))
        return int(stats["bytes_read"]), int(stats["bytes_written"])
    info = redis.Redis(host, int(port), socket_timeout=5).info("stats")
    return int(info["total_net_input_bytes"]), int(info["total_net_output_bytes"])


def memcached_stats(host: str, port: int) -> dict[str, str]:
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(b"stats\r\n")
        reply = b""
        while not reply.endswith(b"END\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise StoreUnavailable(f"memcached://{host}:{port}", "closed the connection during `stats`")
            reply += chunk
    return {parts[1]: parts[2] for line in reply.decode().splitlines()
            if len(parts := line.split()) == 3 and parts[0] == "STAT"}

"""Stores of several servers: a Redis Cluster or a pool of memcached servers, started and stopped as one.

A `ServerGroup` is what `faasgd.local.services.redis_cluster.start_redis_cluster` and
`faasgd.local.services.memcached_pool.start_memcached_pool` return: the member servers (each a `ServerProcess` of
faasgd.local.services.stores) and the one URL `faasgd.store.open_store` takes for all of them
(`redis-cluster://127.0.0.1:P1,127.0.0.1:P2,...` or `memcached://127.0.0.1:P1,127.0.0.1:P2,...`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faasgd.local.services.stores import ServerProcess, stop_all


@dataclass
class ServerGroup:
    """Servers that together are one store; `url` names them all (never with a password)."""

    name: str  # "redis-cluster" or "memcached-pool"
    url: str  # what open_store takes
    servers: list[ServerProcess] = field(default_factory=list)  # every member, masters first for a cluster
    password: str | None = None  # what clients authenticate with, if any (from a file, never argv)

    @property
    def ports(self) -> list[int]:
        return [server.port for server in self.servers]

    def alive(self) -> bool:
        """True while every member runs."""
        return all(server.alive() for server in self.servers)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every member at once; calling it again does nothing."""
        stop_all(self.servers, timeout)


def group_url(scheme: str, servers: list[ServerProcess], host: str = "127.0.0.1", path: str = "") -> str:
    """`scheme://host:P1,host:P2,...path` for `servers`."""
    return f"{scheme}://" + ",".join(f"{host}:{server.port}" for server in servers) + path

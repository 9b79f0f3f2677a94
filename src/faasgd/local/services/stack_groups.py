"""Stores of several servers in the local runtime: started only when the stack names them.

A stack names a group when an environment value of a function it deploys holds the group's in-cluster address
(faasgd.local.services.dns.named_groups): `redis-cluster.openfaas-fn:6379` (k8s/sharded/redis-cluster.yaml) or a pool
member's pod DNS name `memcached-pool-<i>.memcached-pool.openfaas-fn:11211` (k8s/sharded/memcached-pool.yaml). Then
`faasgd up` starts, beside the single stores and at the same time:

- a Redis Cluster of `--redis-cluster-masters` masters (default 3) and `--redis-cluster-replicas` replicas per
  master (default 0) on loopback (faasgd.local.services.redis_cluster.start_redis_cluster); its nodes announce 127.0.0.1,
  so the MOVED redirects a client follows reach them from the replicas' processes;
- a memcached pool of `--memcached-pool-servers` servers (default: as many as the stack names, 3 in stack.yml;
  fewer than the stack names is refused) (faasgd.local.services.memcached_pool.start_memcached_pool).

Under `--backend docker` both bind the network's gateway address too, as the single stores do, and the
cluster's nodes announce that address from their start (start_redis_cluster's `also_bind`: cluster-announce-ip,
and the nodes meet there): a node tells clients where every slot lives by the one
address it announces, and the bridge's address is one both the containers and the host reach (127.0.0.1 is
not, from a container).

state.json records each group's URL and every member's identity (`group_entries`), so `faasgd down` stops
them all (`member_refs`). A runtime started after a crash never adopts a group: its members are stopped and
a fresh group is started (a job on it then fails naming the store that restarted empty, as on a cluster).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from faasgd.checks import whole_number
from faasgd.errors import ConfigError
from faasgd.local.processes import ProcessRef
from faasgd.local.services import dns
from faasgd.local.services.memcached_pool import MAX_SERVERS as MAX_POOL_SERVERS
from faasgd.local.services.store_groups import ServerGroup

CLUSTER = "redis-cluster"  # the group names: ServerGroup.name, state.json's keys, what `faasgd up` prints
POOL = "memcached-pool"
DEFAULT_MASTERS = 3


@dataclass(frozen=True)
class GroupSizes:
    """How large a group is when started (the `faasgd up` flags); pool_servers None: as many as the stack names."""

    cluster_masters: int = DEFAULT_MASTERS
    cluster_replicas: int = 0
    pool_servers: int | None = None

    def check(self) -> "GroupSizes":
        """ConfigError naming the flag when a size is out of range."""
        for flag, value, low, high in (("--redis-cluster-masters", self.cluster_masters, 1, 64),
                                       ("--redis-cluster-replicas", self.cluster_replicas, 0, 64),
                                       ("--memcached-pool-servers", self.pool_servers, 1, MAX_POOL_SERVERS)):
            if value is None and flag == "--memcached-pool-servers":
                continue
            whole_number(value, flag, low=low, high=high, must=f"a whole number in [{low}, {high}]")
        return self

    def to_argv(self) -> list[str]:
        """The daemon's flags for these sizes."""
        argv = ["--redis-cluster-masters", str(self.cluster_masters),
                "--redis-cluster-replicas", str(self.cluster_replicas)]
        return argv + (["--memcached-pool-servers", str(self.pool_servers)] if self.pool_servers else [])


@dataclass(frozen=True)
class GroupPlan:
    """What to start: the cluster's masters and replicas per master (0 masters: none), the pool's servers
    (0: none)."""

    cluster_masters: int = 0
    cluster_replicas: int = 0
    pool_servers: int = 0


def plan(environments: Iterable[Mapping[str, str]], sizes: GroupSizes) -> GroupPlan:
    """The groups the deployed functions' environments name, sized by `sizes`; ConfigError naming the flag
    when they cannot be started as asked."""
    sizes.check()
    cluster, members = dns.named_groups(value for env in environments for value in env.values())
    if members > MAX_POOL_SERVERS:  # refused here, before `faasgd up` starts anything, not by the starter after
        raise ConfigError("stores", f"the stack names {members} memcached pool members ({POOL}-0 .. "
                                    f"{POOL}-{members - 1}); a local pool has at most {MAX_POOL_SERVERS}")
    if members and sizes.pool_servers is not None and sizes.pool_servers < members:
        raise ConfigError("--memcached-pool-servers", f"the stack names {members} memcached pool members "
                                                      f"({POOL}-0 .. {POOL}-{members - 1}), more than "
                                                      f"{sizes.pool_servers}")
    return GroupPlan(cluster_masters=sizes.cluster_masters if cluster else 0,
                     cluster_replicas=sizes.cluster_replicas if cluster else 0,
                     pool_servers=(sizes.pool_servers or members) if members else 0)


def starters(group_plan: GroupPlan, also_bind: str | None = None,
             password: str | None = None) -> dict[str, Callable[[], ServerGroup]]:
    """A starter per group in the plan, by group name (the starters' modules are imported when called); the Redis
    Cluster requires `password` when given (memcached's pool takes none: the functions' client sends none)."""
    def start_cluster() -> ServerGroup:
        from faasgd.local.services.redis_cluster import start_redis_cluster

        return start_redis_cluster(masters=group_plan.cluster_masters, replicas=group_plan.cluster_replicas,
                                   also_bind=also_bind, password=password)  # its nodes announce also_bind when given

    def start_pool() -> ServerGroup:
        from faasgd.local.services.memcached_pool import start_memcached_pool

        return start_memcached_pool(servers=group_plan.pool_servers, also_bind=also_bind)
    return {**({CLUSTER: start_cluster} if group_plan.cluster_masters else {}),
            **({POOL: start_pool} if group_plan.pool_servers else {})}


def players(groups: Mapping[str, ServerGroup], host: str = "127.0.0.1") -> dict[str, str]:
    """What plays each group Service (faasgd.local.services.dns.group_services) here: the cluster's first node
    (a seed), and each pool member's own server."""
    local = {}
    if CLUSTER in groups:
        local[dns.CLUSTER.played_by] = f"{host}:{groups[CLUSTER].servers[0].port}"
    for index, server in enumerate(groups[POOL].servers if POOL in groups else []):
        local[dns.pool_member(index).played_by] = f"{host}:{server.port}"
    return local


def group_services(groups: Mapping[str, ServerGroup]) -> list[dns.Service]:
    """The Services the started groups play."""
    return dns.group_services(CLUSTER in groups, len(groups[POOL].servers) if POOL in groups else 0)


def group_entries(groups: Mapping[str, ServerGroup]) -> dict[str, dict]:
    """state.json's `store_groups`: each group's URL and its members (URL and process identity)."""
    return {name: {"url": group.url,
                   "members": [{"url": server.url, **server.ref.to_json()} for server in group.servers]}
            for name, group in groups.items()}


def member_refs(state: Mapping) -> list[ProcessRef]:
    """Every group member a state file names (an entry without an identity is never ours)."""
    groups = state.get("store_groups")
    entries = [member for group in (groups.values() if isinstance(groups, dict) else [])
               if isinstance(group, dict) and isinstance(group.get("members"), list) for member in group["members"]]
    return [ref for ref in map(ProcessRef.from_json, entries) if ref is not None]

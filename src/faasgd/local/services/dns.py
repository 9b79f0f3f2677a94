"""Cluster DNS, emulated: the in-cluster Service addresses a stack names, answered on this machine.

On Kubernetes a function reaches the gateway and the stores by Service name, e.g.
`http://gateway.openfaas:8080` (the OpenFaaS gateway) or `redis://redis.openfaas-fn:6379/0`
(k8s/redis.yaml). Nothing resolves those names on one machine, so the local runtime rewrites every
`host:port` of a known Service found in a replica's environment values to the loopback address of
the process that plays that Service here. It knows OpenFaaS and Kubernetes names only: which
environment key holds an address, and what the function does with it, is the function's business.

A name matches in every form cluster DNS answers from a function pod (namespace `openfaas-fn`,
search path `openfaas-fn.svc.cluster.local svc.cluster.local cluster.local`): `name.namespace`,
`name.namespace.svc`, `name.namespace.svc.cluster.local`, and the bare `name` for a Service in the
functions' own namespace. Only `host:port` is rewritten: a host without its port is left alone.

Stores of several servers (k8s/sharded/redis-cluster.yaml, k8s/sharded/memcached-pool.yaml) are played only when a stack names
them (`named_groups`): the Redis Cluster's Service `redis-cluster` by one of its nodes (a seed: the client learns
the others from it), and each memcached pool member's pod DNS name `memcached-pool-<i>.memcached-pool` (a
StatefulSet pod behind a headless Service) by a server of its own (`group_services`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

FUNCTION_NAMESPACE = "openfaas-fn"  # where OpenFaaS CE runs functions, and k8s/ puts the stores
CLUSTER_DOMAIN = "cluster.local"
_HOST_CHAR = r"[A-Za-z0-9.-]"


@dataclass(frozen=True)
class Service:
    """A Kubernetes Service the stack refers to, and which local process plays it."""

    name: str
    namespace: str
    port: int
    played_by: str  # the local process answering it: "gateway", "redis" or "memcached"

    def hostnames(self) -> list[str]:
        """Every name cluster DNS resolves to this Service from a function pod."""
        qualified = f"{self.name}.{self.namespace}"
        names = [qualified, f"{qualified}.svc", f"{qualified}.svc.{CLUSTER_DOMAIN}"]
        return names + ([self.name] if self.namespace == FUNCTION_NAMESPACE else [])


SERVICES = (
    Service("gateway", "openfaas", 8080, "gateway"),  # the OpenFaaS chart's gateway Service
    Service("redis", FUNCTION_NAMESPACE, 6379, "redis"),  # k8s/redis.yaml
    Service("memcached", FUNCTION_NAMESPACE, 11211, "memcached"),  # k8s/memcached.yaml
    # k8s/memcached-local.yaml: one memcached per node (internalTrafficPolicy: Local); here, one node
    Service("memcached-local", FUNCTION_NAMESPACE, 11211, "memcached"),
)


CLUSTER = Service("redis-cluster", FUNCTION_NAMESPACE, 6379, "redis-cluster")  # k8s/sharded/redis-cluster.yaml
POOL = "memcached-pool"  # k8s/sharded/memcached-pool.yaml: StatefulSet and headless Service of this name
POOL_PORT = 11211
_POOL_MEMBER = re.compile(rf"(?<!{_HOST_CHAR}){POOL}-([0-9]+)\.{POOL}(?:\.{FUNCTION_NAMESPACE}(?:\.svc"
                          rf"(?:\.{re.escape(CLUSTER_DOMAIN)})?)?)?:{POOL_PORT}(?![0-9])", re.IGNORECASE)


def pool_member(index: int) -> Service:
    """Pod `index` of the memcached pool, by its pod DNS name; played by "memcached-pool/<index>"."""
    return Service(f"{POOL}-{index}.{POOL}", FUNCTION_NAMESPACE, POOL_PORT, f"{POOL}/{index}")


def group_services(cluster: bool, pool_size: int) -> list[Service]:
    """The Services of the groups started: the cluster's, and one per pool member (0 .. pool_size - 1)."""
    return ([CLUSTER] if cluster else []) + [pool_member(i) for i in range(pool_size)]


def named_groups(values: Iterable[str]) -> tuple[bool, int]:
    """Which groups these environment values name: (the Redis Cluster's Service, with its port, is named;
    how many memcached pool members they reach: the highest member index named + 1, 0 when none)."""
    cluster_pattern = _pattern({f"{host}:{CLUSTER.port}": "" for host in CLUSTER.hostnames()})
    cluster, members = False, 0
    for value in values:
        cluster = cluster or cluster_pattern.search(value) is not None
        members = max([members, *(int(index) + 1 for index in _POOL_MEMBER.findall(value))])
    return cluster, members


def addresses(local: Mapping[str, str], services: Iterable[Service] = SERVICES) -> dict[str, str]:
    """Cluster `host:port` -> local `127.0.0.1:port`, for every name of every service.

    `local` maps each player ("gateway", "redis", "memcached") to the address it listens on here;
    a service whose player is missing raises KeyError naming it.
    """
    table = {}
    for service in services:
        if service.played_by not in local:
            raise KeyError(f"no local {service.played_by} plays {service.name}.{service.namespace}")
        for host in service.hostnames():
            table[f"{host}:{service.port}"] = local[service.played_by]
    return table


def rewrite(environment: Mapping[str, str], table: Mapping[str, str]) -> dict[str, str]:
    """The environment with every cluster address of `table` in its values replaced by the local one."""
    if not table:
        return dict(environment)
    pattern = _pattern(table)
    lowered = {address.lower(): local for address, local in table.items()}  # DNS names ignore case
    return {key: pattern.sub(lambda match: lowered[match.group(0).lower()], value)
            for key, value in environment.items()}


def _pattern(table: Mapping[str, str]) -> re.Pattern:
    """One regex for every address: a whole host (not the tail of a longer name) and a whole port."""
    alternatives = "|".join(re.escape(address) for address in sorted(table, key=len, reverse=True))
    return re.compile(rf"(?<!{_HOST_CHAR})(?:{alternatives})(?![0-9])", re.IGNORECASE)


"""The runtime on emulated nodes: which store runs on which node, what each node's functions call, where a replica
goes.

    starters = store_starters(net, directory, password)   # redis, memcached on node-1; memcached-local on each
    seats = Seats(net, node_tables(port, stores, net), "affinity", manifest_rules(stack_dir / "k8s"))
    Supervisor(..., seat=seats)                            # each new replica: the Host of the node it goes to

A replica's watchdog and the port the gateway calls stay on the host (faasgd.local.replicas.netns); its function
process runs in its node's namespace, so every connection the function opens (to the stores, to the gateway,
fan-out and re-invocations) crosses its node's link, and a call reaching it does not (one hop of a request body,
small beside the parameters a worker moves). Its Service addresses (faasgd.local.services.dns) name what it
reaches from there: the gateway at the bridge's address, redis and memcached at the store node's, memcached-local
(k8s/memcached-local.yaml: a DaemonSet, one per node, `internalTrafficPolicy: Local`) at its own node's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Mapping

from faasgd.errors import ConfigError
from faasgd.local.nodes.docker_net import DockerNodeNet
from faasgd.local.nodes.network import Node, NodeNet
from faasgd.local.nodes.placement import Pod, Workload, function_pod, manifest_rules, place
from faasgd.local.replicas.pods import Host
from faasgd.local.services import dns
from faasgd.local.services.stack_groups import GroupPlan
from faasgd.local.services.stores import ServerProcess, Where, start_memcached, start_redis

Nodes = NodeNet | DockerNodeNet  # namespaces on a bridge (process replicas), or Docker networks (containers)
LOCAL_CACHE = "memcached-local"  # the DaemonSet's name and the Service its pods play
STORES = ("redis", "memcached")  # the runtime's single-server stores: together on the first node (placement's doc)


def create(options, directory: Path, site) -> Nodes | None:
    """`plan`'s nodes, created (a container runtime's `site` told of their networks); None for 1 node."""
    net = plan(options, directory, site)
    if net is not None:
        net.create()
    try:
        if isinstance(net, DockerNodeNet):
            site.add_nodes(net.networks())
    except BaseException:
        net.remove()
        raise
    return net


def take_down(site, net: Nodes | None) -> None:
    """The container site (its containers, networks and wall), then the nodes, even when the first raised."""
    try:
        if site is not None:
            site.stop()
    finally:
        if net is not None:
            net.remove()


def plan(options, directory: Path, site) -> Nodes | None:
    """The emulated nodes a runtime's UpOptions ask for (none for 1): namespaces on a bridge for processes, a Docker
    network each for containers (`site`: the runtime's faasgd.local.services.docker_site.DockerSite); nothing created
    yet."""
    if options.nodes <= 1:
        return None
    if site is not None:
        return DockerNodeNet.plan(options.nodes, options.node_link, directory, site.identity, site.gateway_ip)
    return NodeNet.plan(options.nodes, options.node_link, directory)


def where(node: Node) -> Where:
    return Where(node.address, tuple(node.command([])))


def local_cache(node: Node) -> str:
    """The name of `node`'s memcached-local server among the runtime's stores."""
    return f"{LOCAL_CACHE}/{node.name}"


def store_starters(net: Nodes, directory: Path, password: str | None,
                   groups: GroupPlan = GroupPlan()) -> dict[str, Callable[[], ServerProcess]]:
    """How each store starts: redis and memcached in the first node, a memcached-local in every node. ConfigError
    naming --nodes when the stack names a store group (`groups`): those run on the host's loopback only."""
    if groups != GroupPlan():
        raise ConfigError("--nodes", "the stack names a Redis Cluster or a memcached pool; emulated nodes run the "
                                     "single-server stores only (deploy the other functions with --filter)")
    home = where(net.nodes[0])
    return {"redis": lambda: start_redis(workdir=str(directory), password=password, where=home),
            "memcached": lambda: start_memcached(where=home),
            **{local_cache(node): (lambda node=node: start_memcached(where=where(node))) for node in net.nodes}}


def store_nodes(net: Nodes) -> dict[str, str]:
    """Each store's node, by the store's name (store_starters')."""
    return {**{name: net.nodes[0].name for name in STORES}, **{local_cache(node): node.name for node in net.nodes}}


def node_tables(port: int, stores: Mapping[str, ServerProcess], net: Nodes) -> dict[str, dict[str, str]]:
    """Per node, the Service table of the functions running there (faasgd.local.services.dns.addresses)."""
    services = [dataclasses.replace(s, played_by=LOCAL_CACHE) if s.name == LOCAL_CACHE else s for s in dns.SERVICES]
    tables = {}
    for node in net.nodes:
        cache = stores[local_cache(node)]
        local = {"gateway": f"{net.gateway}:{port}", **{name: f"{stores[name].host}:{stores[name].port}"
                                                        for name in STORES}, LOCAL_CACHE: f"{cache.host}:{cache.port}"}
        tables[node.name] = dns.addresses(local, services)
    return tables


class Seats:
    """Where each new replica goes (faasgd.local.nodes.placement), as the Host it starts with there."""

    def __init__(self, net: Nodes, tables: Mapping[str, Mapping[str, str]], policy: str,
                 workloads: Mapping[str, Workload]):
        self.net, self.nodes = net, {node.name: node for node in net.nodes}
        self.tables, self.policy = tables, policy
        empty = Workload("Deployment")
        self.stores = [workloads.get(name, empty).pod(name, net.nodes[0].name) for name in STORES] + \
            [workloads.get(LOCAL_CACHE, empty).pod(LOCAL_CACHE, node.name) for node in net.nodes]

    @classmethod
    def of(cls, net: Nodes, options, stores: Mapping[str, ServerProcess]) -> Seats:
        """The runtime's, from its UpOptions: its port and placement, the k8s/ manifests beside its stack."""
        return cls(net, node_tables(options.port, stores, net), options.placement,
                   manifest_rules(Path(options.stack).resolve().parent / "k8s"))

    def state_entries(self, stores: Mapping[str, dict]) -> dict:
        """state.json's `nodes` and its `stores` entries each with its node."""
        return {"nodes": {**self.net.to_json(), "placement": self.policy},
                "stores": {name: {**entry, "node": store_nodes(self.net)[name]} for name, entry in stores.items()}}

    def node_for(self, function: str, running: list[tuple[str, str]]) -> str:
        """The node a new replica of `function` goes to, given the (function, node) of the replicas running."""
        placed: list[Pod] = self.stores + [dataclasses.replace(function_pod(owner), node=node)
                                           for owner, node in running]
        return place(function_pod(function), list(self.nodes), placed, self.policy)

    def __call__(self, host: Host, function: str, running: list[tuple[str, str]]) -> Host:
        node = self.nodes[self.node_for(function, running)]
        return dataclasses.replace(host, services=self.tables[node.name], node=node.name, netns=node.netns_path)

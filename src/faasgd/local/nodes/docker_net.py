"""Emulated nodes for the container backend: a Docker network per node, joined by the host's routing, each node's
link shaped both ways at its bridge.

    net = DockerNodeNet.plan(3, "100mbit", directory, identity, gateway)  # names and addresses, nothing created
    net.create()                                   # NeedsRoot without root; removes what it made on failure
    net.networks()                                 # {node name: Network} the replicas of each node join
    net.link_bytes()                               # as NodeNet's: {"node-1": {"to_node": B, "from_node": B}, ...}
    net.remove()                                   # the networks, the store namespaces, the buckets, the rule

Layout, from 198.18.0.0/15 (the process backend's range, chosen the same way): node i is the Docker network
faasgd-<id>-node-i on a /24 of its own, its Linux bridge named by us PREFIXb{i} (so its counters, queues and rules
are found by name), the host at .1 of it. At .2 (kept from Docker's own addresses by --aux-address) is the network
namespace PREFIX-{i}, a port of the same bridge through the veth pair PREFIX-h{i} / PREFIX-n{i}: the node's stores
run there (redis and memcached on node-1, a memcached-local on every node), as in the process backend's node
namespaces. The node's containers take .3 to .254.

The link: what the host sends into the node (from the gateway, or routed from another node) leaves by the bridge's
own egress, shaped by tbf; what the node sends out enters at the bridge's ingress, is redirected (a u32 filter
and mirred) to the ifb PREFIX-i{i}, and is shaped by the tbf on its egress. Frames between two ports of one bridge
(a replica and its node's store) never pass the bridge device: the same node, no link, as in the process backend.
The kernel counts the link on the bridge: tx_bytes went to the node, rx_bytes came from it.

Docker drops traffic between two of its bridge networks (its DOCKER-ISOLATION chains); one rule in DOCKER-USER
accepts it between this runtime's node bridges only (in and out by PREFIXb+; comment PREFIX). Masquerading is off
on these networks, and one rule in nat's POSTROUTING (`unmasked_rule`) keeps anything sent into them from being
masqueraded, so a node sees its peers' and the gateway's own addresses; no node container reaches beyond the
machine. A container on any other Docker network still reaches none of them. The gateway and the S3 server stay
host processes on the runtime's own network address (faasgd.local.services.docker_site), whose wall lets the node
bridges in.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from faasgd.local.nodes.links import add_namespace, ip, rebuilt, remove_all, run, tbf
from faasgd.local.nodes.network import Node, check_nodes, free_subnets, link_bytes, parse_rate
from faasgd.local.replicas.containers import Network
from faasgd.local.services import docker_cli

NODE_LABEL = "faasgd.nodes"  # on each node's network: the runtime's PREFIX


@dataclass(frozen=True)
class DockerNode(Node):
    """One node: its Docker network and bridge, and (Node's fields) its stores' namespace and address."""

    network: str = ""
    subnet: str = ""
    bridge: str = ""
    ifb: str = ""

    @property
    def bridge_ip(self) -> str:
        return str(ipaddress.ip_network(self.subnet)[1])

    def to_json(self) -> dict:
        return {**super().to_json(), "link": self.bridge, "network": self.network, "subnet": self.subnet}


@dataclass(frozen=True)
class DockerNodeNet:
    """The nodes of one container runtime; nothing exists until `create`."""

    prefix: str
    identity: str  # the runtime's id (faasgd.local.services.docker_site.runtime_id)
    gateway: str  # the host's address on the runtime's own network: where the nodes reach the gateway
    nodes: tuple[DockerNode, ...]
    rate_mbit: float | None

    @classmethod
    def plan(cls, count: int, rate: str | None, directory: str | Path, identity: str, gateway: str) -> DockerNodeNet:
        check_nodes(count)
        rate_mbit = None if rate is None else parse_rate(rate)
        digest = hashlib.sha1(str(Path(directory).resolve()).encode()).hexdigest()
        prefix = f"fg{digest[:6]}"
        subnets = [f"198.{second}.{third}" for second, third in free_subnets(int(digest[6:12], 16), count)]
        nodes = tuple(DockerNode(name=f"node-{i}", netns=f"{prefix}-{i}", address=f"{base}.2",
                                 host_veth=f"{prefix}-h{i}", ns_veth=f"{prefix}-n{i}",
                                 network=f"faasgd-{identity}-node-{i}", subnet=f"{base}.0/24",
                                 bridge=f"{prefix}b{i}", ifb=f"{prefix}-i{i}") for i, base in enumerate(subnets, 1))
        return cls(prefix, identity, gateway, nodes, rate_mbit)

    def create(self) -> None:
        """The networks, the namespaces, the buckets and the rules (links.rebuilt: NeedsRoot without root)."""
        rebuilt(lambda: remove_docker_nodes(self.prefix), self._create)

    def _create(self) -> None:
        run(["iptables", "-w", "5", "-I", "DOCKER-USER", *accept_rule(self.prefix)])
        run(["iptables", "-w", "5", "-t", "nat", "-I", "POSTROUTING", *unmasked_rule(self.prefix)])
        for node in self.nodes:
            docker_cli.docker("network", "create", "--driver", "bridge", "--subnet", node.subnet,
                              "--aux-address", f"stores={node.address}", "--label", f"{NODE_LABEL}={self.prefix}",
                              "--label", f"faasgd.runtime={self.identity}",
                              "-o", f"com.docker.network.bridge.name={node.bridge}",
                              "-o", "com.docker.network.bridge.enable_ip_masquerade=false", node.network)
            inside = add_namespace(node.netns, node.host_veth, node.ns_veth, node.bridge, f"{node.address}/24")
            run([*inside, "route", "add", "default", "via", node.bridge_ip])
            if self.rate_mbit is not None:
                self._shape(node)

    def _shape(self, node: DockerNode) -> None:
        ip("link", "add", node.ifb, "type", "ifb")
        ip("link", "set", node.ifb, "up")
        run(["tc", "qdisc", "replace", "dev", node.bridge, "root", *tbf(self.rate_mbit)])
        run(["tc", "qdisc", "add", "dev", node.bridge, "handle", "ffff:", "ingress"])
        run(["tc", "filter", "add", "dev", node.bridge, "parent", "ffff:", "protocol", "all", "u32", "match", "u32",
             "0", "0", "action", "mirred", "egress", "redirect", "dev", node.ifb])
        run(["tc", "qdisc", "replace", "dev", node.ifb, "root", *tbf(self.rate_mbit)])

    def networks(self) -> dict[str, Network]:
        """Each node's network as its replicas join it (the gateway at the runtime's address)."""
        return {node.name: Network(node.network, self.gateway, self.identity, node.bridge) for node in self.nodes}

    def remove(self) -> None:
        remove_docker_nodes(self.prefix)

    def link_bytes(self) -> dict[str, dict[str, int]]:
        return link_bytes(self.to_json())

    def to_json(self) -> dict:
        """state.json's `nodes`, as NodeNet's (what `faasgd status` shows and `faasgd down` removes), with the
        backend."""
        return {"prefix": self.prefix, "gateway": self.gateway, "rate_mbit": self.rate_mbit, "backend": "docker",
                "list": [node.to_json() for node in self.nodes]}


def bridges(prefix: str) -> str:
    """iptables' name of every node bridge of the runtime (a trailing + matches any ending)."""
    return f"{prefix}b+"


def accept_rule(prefix: str) -> list[str]:
    return ["-i", bridges(prefix), "-o", bridges(prefix), "-j", "ACCEPT", "-m", "comment", "--comment", prefix]


def unmasked_rule(prefix: str) -> list[str]:
    """Nothing sent into the nodes is masqueraded. Docker masquerades what leaves its runtime network's subnet by
    another interface, the host's own address on it included, and a node's packets reach the host through the ifb
    untracked by the connection they belong to: the gateway's answers then went out from the node bridge's address,
    and the caller reset the connection."""
    return ["-o", bridges(prefix), "-j", "RETURN", "-m", "comment", "--comment", prefix]


def remove_docker_nodes(prefix: str) -> None:
    """The node networks labelled `prefix` (their containers removed before: the runtime's label), then, whatever
    Docker answered, what links.remove_all takes: the store namespaces and their processes, the veths, the ifbs and
    the rules."""
    try:
        for network in docker_cli.listed("network", f"{NODE_LABEL}={prefix}"):
            docker_cli.docker("network", "rm", network, check=False)
    finally:
        remove_all(prefix)

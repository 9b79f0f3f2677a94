"""Store nodes behind rate-limited links: each node a network namespace joined to the host by a shaped veth pair.

    with ShapedNet(nodes=3, rate_mbit=100) as net:
        net.nodes[0].address            # "198.18.0.11": what a store server in that namespace binds
        net.command(net.nodes[0], ["memcached", "-l", "198.18.0.11", ...])   # argv that runs it there
        net.shape(None)                 # unshaped; net.shape(50) limits every link to 50 Mbit/s again

Layout (addresses from the benchmarking range 198.18.0.0/15, RFC 2544): a host bridge PREFIX-br holding
198.18.S.1/24; node i (1-based) is the namespace PREFIX-i with 198.18.S.(10+i) on its end PREFIX-ni of a veth
pair whose host end PREFIX-hi is a port of the bridge. Each link is limited both ways by a token bucket (`tc`
tbf) on the egress of both ends: the host end's limits traffic to the store, the namespace end's traffic from it.
Workers on the host reach node i through the bridge; the host's own processes stay unshaped.

Everything carries the name prefix (at most 10 characters: a Linux link name holds 15), and cleaning up goes by
it: on entering, whatever an earlier run with the same prefix left (killed by SIGKILL) is removed first; on
leaving, also after an exception or Ctrl-C, every process running in a node's namespace is stopped, the
namespaces, links and bridge are deleted. `node_to_node` also lets the nodes reach each other (a Redis Cluster's
bus): the bridge's port-to-port frames pass iptables' FORWARD chain here (br_netfilter), whose policy Docker sets
to DROP, so one ACCEPT rule for this bridge is inserted and removed with it.
Needs root (namespaces, links, qdiscs): refused with NeedsRoot otherwise.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from faasgd.checks import positive_number, whole_number
from faasgd.errors import ConfigError
from faasgd.local import node_links

# the namespaces' and links' pieces the runtime's emulated nodes share (faasgd.local.nodes.links), by their names here
BURST_S, NeedsRoot, forward_rule, ip, names = (node_links.BURST_S, node_links.NeedsRoot, node_links.forward_rule,
                                               node_links.ip, node_links.names)
pids_in, remove_all, require_root, run, tbf = (node_links.pids_in, node_links.remove_all, node_links.require_root,
                                               node_links.run, node_links.tbf)

PREFIX = "fsgd-scale"  # the bench's; tests use their own so a test never removes a running bench's nodes
MAX_NODES = 20
_PREFIX_FORM = re.compile(r"[a-z][a-z0-9-]{0,9}\Z")


@dataclass(frozen=True)
class Node:
    """One store node: a network namespace and its end of the shaped link."""

    index: int  # 1-based
    netns: str
    address: str
    host_veth: str
    ns_veth: str


class ShapedNet:
    """`nodes` namespaces behind `rate_mbit` links (None: unshaped), created on entering, removed on leaving."""

    def __init__(self, nodes: int, rate_mbit: float | None = 100.0, prefix: str = PREFIX, subnet: int = 0,
                 node_to_node: bool = False):
        check_settings(nodes, rate_mbit, prefix, subnet)
        self.prefix, self.rate_mbit, self.node_to_node = prefix, rate_mbit, node_to_node
        self.bridge = f"{prefix}-br"
        self.gateway = f"198.18.{subnet}.1"
        self.nodes = [Node(i, f"{prefix}-{i}", f"198.18.{subnet}.{10 + i}", f"{prefix}-h{i}", f"{prefix}-n{i}")
                      for i in range(1, nodes + 1)]

    def __enter__(self) -> ShapedNet:
        require_root()
        remove_all(self.prefix)
        try:
            self.create()
        except BaseException:
            remove_all(self.prefix)
            raise
        return self

    def __exit__(self, *exc) -> None:
        remove_all(self.prefix)

    def create(self) -> None:
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        if self.node_to_node:
            run(["iptables", "-I", "FORWARD", *forward_rule(self.bridge)])
        for node in self.nodes:
            ip("netns", "add", node.netns)
            ip("link", "add", node.host_veth, "type", "veth", "peer", "name", node.ns_veth, "netns", node.netns)
            ip("link", "set", node.host_veth, "master", self.bridge, "up")
            inside = ["ip", "netns", "exec", node.netns, "ip"]
            run([*inside, "addr", "add", f"{node.address}/24", "dev", node.ns_veth])
            run([*inside, "link", "set", node.ns_veth, "up"])
            run([*inside, "link", "set", "lo", "up"])
        self.shape(self.rate_mbit)

    def shape(self, rate_mbit: float | None) -> None:
        """Every link limited to `rate_mbit` both ways (tbf replaced in place), or unlimited with None."""
        if rate_mbit is not None and not rate_mbit > 0:
            raise ConfigError("rate_mbit", f"must be a positive number of Mbit/s or None (unshaped), not {rate_mbit!r}")
        for node in self.nodes:
            for where in ([], ["-n", node.netns]):
                device = node.ns_veth if where else node.host_veth
                if rate_mbit is None:
                    subprocess.run(["tc", *where, "qdisc", "del", "dev", device, "root"], capture_output=True)
                else:
                    run(["tc", *where, "qdisc", "replace", "dev", device, "root", *tbf(rate_mbit)])
        self.rate_mbit = rate_mbit

    def command(self, node: Node, argv: list[str]) -> list[str]:
        """`argv` run inside `node`'s namespace (ip netns exec execs it: the process keeps the pid started)."""
        return ["ip", "netns", "exec", node.netns, *argv]


def check_settings(nodes: int, rate_mbit: float | None, prefix: str, subnet: int) -> None:
    whole_number(nodes, "nodes", low=1, high=MAX_NODES, must=f"a whole number from 1 to {MAX_NODES}")
    if rate_mbit is not None:
        positive_number(rate_mbit, "rate_mbit", must="a positive number of Mbit/s or None (unshaped)")
    if not isinstance(prefix, str) or not _PREFIX_FORM.match(prefix):
        raise ConfigError("prefix", f"must be 1-10 lower-case letters, digits or '-', starting with a letter "
                                    f"(link names hold 15 characters), not {prefix!r}")
    whole_number(subnet, "subnet", low=0, high=255, must="0-255 (the third byte of 198.18.S.0/24)")

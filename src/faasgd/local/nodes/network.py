"""The runtime's emulated nodes: N network namespaces on one host bridge, each behind a link shaped both ways.

    net = NodeNet.plan(3, "100mbit", directory)   # names and addresses, nothing created yet
    net.create()                                  # NeedsRoot without root; removes what it made on failure
    net.nodes[0].command(["redis-server", ...])   # argv run inside node-1
    net.link_bytes()                              # {"node-1": {"to_node": B, "from_node": B}, ...}
    net.remove()                                  # processes inside, namespaces, links, bridge, FORWARD rule

Layout (addresses only from 198.18.0.0/15, RFC 2544's benchmarking range): the bridge PREFIX-br holds A.B.C.1/24
on the host; node i is the namespace PREFIX-i with A.B.C.(10+i) on its end PREFIX-ni of a veth pair whose host end
PREFIX-hi is a port of the bridge. Both ends are limited to the rate by tbf (faasgd.local.nodes.links), so what a
node sends and what it receives each pass one bucket; traffic between two nodes crosses both nodes' links, as it
crosses two NICs and a switch on a cluster. The host itself (the gateway, the queue, the CLI) is the switch's
own port: unshaped, reached by the nodes at the bridge's address.

PREFIX is "fg" and 6 hex digits of the runtime's folder, so two runtimes (parallel tests) never share a name; the
/24 is chosen from the same digits among those no interface of the host uses yet. The kernel counts each link's
bytes on the host end (/sys/class/net/PREFIX-hi/statistics): tx_bytes went to the node, rx_bytes came from it.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from faasgd.checks import whole_number
from faasgd.errors import ConfigError
from faasgd.local.nodes.links import add_namespace, forward_rule, ip, rebuilt, remove_all, run, tbf

MAX_NODES = 20
RATE_UNITS = {"kbit": 1e-3, "mbit": 1.0, "gbit": 1e3}  # tc's units, in Mbit/s (10^6 bit/s)
_RATE_FORM = re.compile(r"([0-9]+(?:\.[0-9]+)?)(kbit|mbit|gbit)\Z")
SUBNETS = [(18, c) for c in range(256)] + [(19, c) for c in range(256)]  # the /24s of 198.18.0.0/15
STATISTICS = "/sys/class/net/{link}/statistics/{counter}"


def parse_rate(text: str, field: str = "--node-link") -> float:
    """A link rate as tc writes it ("100mbit", "1gbit", "500kbit") in Mbit/s; ConfigError naming `field`."""
    match = _RATE_FORM.match(text.strip().lower()) if isinstance(text, str) else None
    if match is None or float(match.group(1)) <= 0:
        raise ConfigError(field, f"must be a rate as tc writes it, a positive number and kbit, mbit or gbit "
                                 f"(e.g. 100mbit, 1gbit), got {text!r}")
    return float(match.group(1)) * RATE_UNITS[match.group(2)]


def check_nodes(count: int) -> None:
    whole_number(count, "--nodes", low=1, high=MAX_NODES, must=f"a whole number from 1 to {MAX_NODES}")


@dataclass(frozen=True)
class Node:
    """One emulated node: its name (as Kubernetes' kubernetes.io/hostname label), namespace and link."""

    name: str  # node-1, node-2, ...
    netns: str
    address: str
    host_veth: str
    ns_veth: str

    @property
    def netns_path(self) -> str:
        """Where `ip netns` keeps the namespace: what setns(2) opens to enter it."""
        return f"/run/netns/{self.netns}"

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside the node (ip netns exec execs it: the process keeps the pid started)."""
        return ["ip", "netns", "exec", self.netns, *argv]

    def to_json(self) -> dict:
        return {"name": self.name, "netns": self.netns, "address": self.address, "link": self.host_veth}


@dataclass(frozen=True)
class NodeNet:
    """The nodes of one runtime; nothing exists until `create`."""

    prefix: str
    gateway: str  # the bridge's address on the host: where the nodes reach the gateway
    nodes: tuple[Node, ...]
    rate_mbit: float | None  # None: unshaped links

    @classmethod
    def plan(cls, count: int, rate: str | None, directory: str | Path) -> NodeNet:
        check_nodes(count)
        rate_mbit = None if rate is None else parse_rate(rate)
        digest = hashlib.sha1(str(Path(directory).resolve()).encode()).hexdigest()
        prefix = f"fg{digest[:6]}"
        second, third = free_subnet(int(digest[6:12], 16))
        base = f"198.{second}.{third}"
        nodes = tuple(Node(f"node-{i}", f"{prefix}-{i}", f"{base}.{10 + i}", f"{prefix}-h{i}", f"{prefix}-n{i}")
                      for i in range(1, count + 1))
        return cls(prefix, f"{base}.1", nodes, rate_mbit)

    def create(self) -> None:
        """The bridge, the namespaces, the links and their buckets (links.rebuilt: NeedsRoot without root)."""
        rebuilt(lambda: remove_all(self.prefix), self._create)

    def _create(self) -> None:
        bridge = f"{self.prefix}-br"
        ip("link", "add", bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        run(["iptables", "-I", "FORWARD", *forward_rule(bridge)])  # node to node, through the bridge
        for node in self.nodes:
            add_namespace(node.netns, node.host_veth, node.ns_veth, bridge, f"{node.address}/24")
            if self.rate_mbit is not None:
                for where, device in (([], node.host_veth), (["-n", node.netns], node.ns_veth)):
                    run(["tc", *where, "qdisc", "replace", "dev", device, "root", *tbf(self.rate_mbit)])

    def remove(self) -> None:
        remove_all(self.prefix)

    def link_bytes(self) -> dict[str, dict[str, int]]:
        return link_bytes(self.to_json())

    def to_json(self) -> dict:
        """state.json's `nodes`: what `faasgd status` shows, the CLI counts and `faasgd down` removes."""
        return {"prefix": self.prefix, "gateway": self.gateway, "rate_mbit": self.rate_mbit,
                "list": [node.to_json() for node in self.nodes]}


def link_bytes(entry: dict) -> dict[str, dict[str, int]]:
    """Each node's bytes so far, from the kernel's counters of its link's host end: `to_node` (tx_bytes) and
    `from_node` (rx_bytes); a link that is gone counts nothing."""
    return {node["name"]: {"to_node": link_counter(node["link"], "tx_bytes"),
                           "from_node": link_counter(node["link"], "rx_bytes")} for node in entry.get("list", [])}


def runtime_link_bytes(state: dict | None) -> dict[str, dict[str, int]] | None:
    """link_bytes of the runtime whose state.json is `state`; None when it runs no emulated nodes."""
    nodes = (state or {}).get("nodes")
    return link_bytes(nodes) if isinstance(nodes, dict) else None


def link_counter(link: str, name: str) -> int:
    try:
        return int(Path(STATISTICS.format(link=link, counter=name)).read_text())
    except (OSError, ValueError):
        return 0


def bytes_between(before: dict, after: dict) -> dict[str, dict[str, int]]:
    """Per node and direction, what the links carried from `before` to `after` (link_bytes of each)."""
    return {name: {way: after[name][way] - before.get(name, {}).get(way, 0) for way in after[name]}
            for name in after}


def free_subnet(start: int) -> tuple[int, int]:
    """(second, third) byte of a /24 of 198.18.0.0/15 no interface of the host has an address in, looked for from
    `start` on (the runtime's digits: two runtimes rarely look at the same one first)."""
    return free_subnets(start, 1)[0]


def free_subnets(start: int, count: int) -> list[tuple[int, int]]:
    """`count` such /24s, the first free ones from `start` on."""
    shown = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    used = set(re.findall(r"inet 198\.(1[89])\.([0-9]+)\.", shown))
    free = [SUBNETS[(start + step) % len(SUBNETS)] for step in range(len(SUBNETS))]
    free = [(second, third) for second, third in free if (str(second), str(third)) not in used][:count]
    if len(free) < count:
        raise ConfigError("--nodes", f"fewer than {count} /24s of 198.18.0.0/15 are free on this host")
    return free

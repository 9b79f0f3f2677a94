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

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

from faasgd.checks import positive_number, whole_number
from faasgd.errors import ConfigError, FaasgdError

PREFIX = "fsgd-scale"  # the bench's; tests use their own so a test never removes a running bench's nodes
MAX_NODES = 20
BURST_MIN_BYTES = 128 * 1024  # above a veth's largest (GSO) packet, 64 KiB, so no packet exceeds the bucket
BURST_S = 0.01  # the bucket holds 10 ms at the rate (at most that much ahead of the rate, once)
QUEUE_LATENCY = "100ms"  # tbf drops what would wait longer
STOP_WAIT_S = 3.0
_PREFIX_FORM = re.compile(r"[a-z][a-z0-9-]{0,9}\Z")


class NeedsRoot(FaasgdError):
    """Raised when shaped nodes are asked for without root (namespaces, links and qdiscs need it)."""


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


def tbf(rate_mbit: float) -> list[str]:
    """tc arguments of a token bucket at `rate_mbit` (Mbit/s = 10^6 bit/s, tc's `mbit`)."""
    burst = max(BURST_MIN_BYTES, int(rate_mbit * 1e6 / 8 * BURST_S))
    return ["tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", QUEUE_LATENCY]


def forward_rule(bridge: str) -> list[str]:
    return ["-i", bridge, "-o", bridge, "-j", "ACCEPT", "-m", "comment", "--comment", bridge]


def require_root() -> None:
    if os.geteuid() != 0:
        raise NeedsRoot("shaped store nodes need root: network namespaces, veth links and tc qdiscs are "
                        "created and removed by this process (run as root, e.g. sudo, or in CI)")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise NeedsRoot(f"shaped store nodes need `{tool}` (apt-get install -y iproute2)")


def ip(*args: str) -> None:
    run(["ip", *args])


def run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise FaasgdError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")


def names(prefix: str) -> tuple[list[str], list[str]]:
    """The namespaces and the host's links whose names start with `prefix`-."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    spaces = [line.split()[0] for line in listed if line.startswith(f"{prefix}-")]
    shown = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.split("\n")
    links = [line.split(":")[1].strip().split("@")[0] for line in shown if line.count(":") >= 2]
    return spaces, [link for link in links if link.startswith(f"{prefix}-")]


def pids_in(netns: str) -> list[int]:
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in listed if pid.isdigit()]


def stop_processes(spaces: list[str]) -> None:
    """SIGTERM to every process in the namespaces, a shared wait, then SIGKILL to those left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in (pid for space in spaces for pid in pids_in(space)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_WAIT_S
        while any(pids_in(space) for space in spaces) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(pids_in(space) for space in spaces):
            return


def remove_all(prefix: str) -> None:
    """Stop the processes in, and delete, every namespace and link named `prefix`-*, and the bridge's rule."""
    spaces, links = names(prefix)
    stop_processes(spaces)
    for space in spaces:
        subprocess.run(["ip", "netns", "del", space], capture_output=True)
    for link in names(prefix)[1]:  # a namespace's deletion takes its veth pair along; the bridge is left
        subprocess.run(["ip", "link", "del", link], capture_output=True)
    if shutil.which("iptables"):
        rule = forward_rule(f"{prefix}-br")
        while subprocess.run(["iptables", "-D", "FORWARD", *rule], capture_output=True).returncode == 0:
            pass
